// URLs of the timeline routes (relative, like every other route) and "Open in Perfetto".
import type { Selection } from "../api/types";

function qs(sel: Selection, extra: Record<string, string | number> = {}): string {
  const p = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
  for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
  return p.toString();
}

export const timelineMetaUrl = (sel: Selection) => `timeline_meta?${qs(sel)}`;

export function timelineUrl(sel: Selection, startUs: number, endUs: number, widthPx: number): string {
  // Rounded to the ns: the server's bins do not need more, and equal windows give equal URLs.
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return `timeline?${qs(sel, { start_us: r(startUs), end_us: r(endUs), width_px: Math.max(1, Math.round(widthPx)) })}`;
}

export function timelineSearchUrl(sel: Selection, q: string, regex: boolean): string {
  return `timeline_search?${qs(sel, regex ? { q, regex: 1 } : { q })}`;
}

export const timelineEventUrl = (sel: Selection, row: number) => `timeline_event?${qs(sel, { row })}`;
export const traceFileUrl = (sel: Selection) => `trace_file?${qs(sel)}`;

const PERFETTO = "https://ui.perfetto.dev";

/**
 * Opens the Perfetto UI in a new window and hands it the trace: PING until it answers PONG, then post
 * the bytes (https://perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui). Needs internet.
 * The file name sent is the one the server gives (Content-Disposition), else `fileName`.
 */
export async function openInPerfetto(fileUrl: string, title: string, fileName: string, win: Window = window): Promise<void> {
  const target = win.open(PERFETTO);
  if (!target) throw new Error("The browser blocked the new window");
  const response = await fetch(fileUrl);
  if (!response.ok) throw new Error(`HTTP ${response.status} fetching the trace`);
  const buffer = await response.arrayBuffer();
  const sent = attachmentName(response.headers.get("Content-Disposition")) ?? fileName;
  await new Promise<void>((resolve, reject) => {
    const timer = win.setInterval(() => target.postMessage("PING", PERFETTO), 250);
    const giveUp = win.setTimeout(() => {
      done();
      reject(new Error("Perfetto did not answer (offline?)"));
    }, 30_000);
    const onMessage = (e: MessageEvent) => {
      if (e.source !== target || e.data !== "PONG") return;
      done();
      resolve();
    };
    const done = () => {
      win.clearInterval(timer);
      win.clearTimeout(giveUp);
      win.removeEventListener("message", onMessage);
    };
    win.addEventListener("message", onMessage);
  });
  target.postMessage({ perfetto: { buffer, title, fileName: sent } }, PERFETTO, [buffer]);
}

/**
 * The file name of a `Content-Disposition: attachment; filename="…"; filename*=UTF-8''…` header, or
 * null. The RFC 5987 `filename*` (any Unicode name, percent-encoded) wins over the ASCII fallback.
 */
export function attachmentName(header: string | null): string | null {
  if (!header) return null;
  const star = /filename\*=UTF-8''([^;\s]+)/i.exec(header);
  if (star) {
    try {
      const name = decodeURIComponent(star[1]!);
      if (name) return name;
    } catch {
      // malformed percent-encoding: use the fallback
    }
  }
  const m = /filename="([^"]+)"/.exec(header);
  return m ? m[1]! : null;
}
