// Shared setup of the view and app tests: a stubbed fetch that records every URL asked for, JSON
// answers, the query of a route URL, and the page put back at the plugin's entry URL.
import { afterEach, beforeEach, vi } from "vitest";

/** A JSON answer with HTTP status `status` (200 unless given). */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** The query parameters of a route URL such as "timeline?run=a&row=3". */
export function query(url: string): URLSearchParams {
  return new URLSearchParams(url.slice(url.indexOf("?") + 1));
}

/**
 * Stubs the global fetch with `answer`; every URL asked for is pushed onto `log`, which is returned
 * (a fresh list unless given, e.g. the test's own list when a test swaps the answers midway).
 */
export function stubFetch(answer: (url: string) => Response | Promise<Response>, log: string[] = []): string[] {
  vi.stubGlobal("fetch", async (url: string) => {
    log.push(url);
    return answer(url);
  });
  return log;
}

/** The server's answer to a route it does not know. */
export function notFound(): Response {
  return json({ error: "not found" }, 404);
}

/**
 * For each test of the calling file: fetch stubbed with `answer` before it (every URL asked for pushed
 * onto the returned list, emptied first) and every global stub and mock restored after it.
 */
export function stubFetchEachTest(answer: (url: string) => Response | Promise<Response>): string[] {
  const log: string[] = [];
  beforeEach(() => {
    log.length = 0;
    stubFetch(answer, log);
  });
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });
  return log;
}

/**
 * Puts the page at the plugin's entry URL (with `hash`, e.g. "#run=a&view=diff"), forgets the stored
 * selection, and lets the hashchange that happy-dom (unlike browsers) fires for replaceState pass.
 */
export async function resetPage(hash = ""): Promise<void> {
  window.history.replaceState(null, "", `/data/plugin_entry.html?name=kinetoscope${hash}`);
  window.sessionStorage.clear();
  await new Promise((resolve) => setTimeout(resolve, 0));
}
