import { describe, expect, it } from "vitest";
import { ApiError, fetchOverview, fetchRuns, overviewUrl } from "./client";

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
});
