// "Open in Perfetto": hands the trace file to ui.perfetto.dev in a new window.
import { fetchFile } from "../../api/http";

const PERFETTO = "https://ui.perfetto.dev";

/**
 * Opens the Perfetto UI in a new window and hands it the trace: PING until it answers PONG, then post
 * the bytes (https://perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui). Needs internet.
 * The file name sent is the one the server gives (Content-Disposition), else `fileName`.
 */
export async function openInPerfetto(fileUrl: string, title: string, fileName: string, win: Window = window): Promise<void> {
  const target = win.open(PERFETTO);
  if (!target) throw new Error("The browser blocked the new window");
  const { bytes: buffer, disposition } = await fetchFile(fileUrl);
  const sent = attachmentName(disposition) ?? fileName;
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
