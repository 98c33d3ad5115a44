import { describe, expect, it } from "vitest";
import { ApiError, fetchFile, fetchJson, type FetchLike } from "./http";
import { overviewUrl, runsUrl } from "./routes";
import type { OverviewResponse, RunsResponse } from "./types";

const fetchRuns = (signal: AbortSignal | undefined, impl: FetchLike) => fetchJson<RunsResponse>(runsUrl(), signal, impl);
const fetchOverview = (sel: { run: string; worker: string; span: string }, signal: AbortSignal | undefined, impl: FetchLike) =>
  fetchJson<OverviewResponse>(overviewUrl(sel), signal, impl);

function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

describe("api client", () => {
  it("uses relative URLs with encoded parameters", () => {
    expect(overviewUrl({ run: "a/b & c#d", worker: "w ñ", span: "1" })).toBe(
      "overview?run=a%2Fb+%26+c%23d&worker=w+%C3%B1&span=1",
    );
  });

  it("requests `runs` relative to the plugin base", async () => {
    const seen: string[] = [];
    const body = { logdir: "/l", loading: { files_total: 0, files_done: 0 }, runs: [] };
    const result = await fetchRuns(undefined, async (url) => {
      seen.push(url);
      return jsonResponse(body);
    });
    expect(seen).toEqual(["runs"]);
    expect(result).toEqual(body);
  });

  it("turns an error status into an ApiError with the server's message", async () => {
    const call = fetchOverview({ run: "x", worker: "w", span: "1" }, undefined, async () =>
      jsonResponse({ error: "unknown run 'x'" }, 404),
    );
    await expect(call).rejects.toBeInstanceOf(ApiError);
    await expect(call).rejects.toThrow("HTTP 404: unknown run 'x'");
  });

  it("reports a network failure and a non-JSON body", async () => {
    await expect(
      fetchRuns(undefined, async () => {
        throw new TypeError("Failed to fetch");
      }),
    ).rejects.toThrow("Cannot reach the server (TypeError: Failed to fetch)");
    await expect(fetchRuns(undefined, async () => new Response("<html>", { status: 200 }))).rejects.toThrow(
      "not JSON",
    );
  });

  it("fetches a file's bytes with its Content-Disposition, and fails on an error status", async () => {
    const got = await fetchFile("trace_file?run=r", async () =>
      new Response(new Uint8Array([1, 2, 3]), { status: 200, headers: { "Content-Disposition": 'attachment; filename="a.json"' } }),
    );
    expect(new Uint8Array(got.bytes)).toEqual(new Uint8Array([1, 2, 3]));
    expect(got.disposition).toBe('attachment; filename="a.json"');
    await expect(fetchFile("trace_file?run=r", async () => new Response("", { status: 404 }))).rejects.toThrow(
      "HTTP 404 fetching the trace",
    );
  });
});
