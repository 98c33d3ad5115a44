import { render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import overviewFixture from "./__fixtures__/overview_resnet50.json";
import runsFixture from "./__fixtures__/runs.json";
import { App } from "./App";
import { json, resetPage, stubFetch } from "./testing/fetch";

vi.mock("./components/EChart", () => ({
  EChart: (props: { testId?: string }) => <div data-testid={props.testId} />,
}));

type Handler = (url: string) => Response | Promise<Response>;

let requests: string[] = [];

function serve(handler: Handler): void {
  stubFetch(handler, requests);
}

function standardServer(url: string): Response {
  if (url === "runs") return json(runsFixture);
  if (url.startsWith("overview?")) {
    const q = new URLSearchParams(url.slice("overview?".length));
    if (q.get("run") === "resnet50_num_workers_0" && q.get("worker") === "worker0" && q.get("span") === "1") {
      return json(overviewFixture);
    }
    return json({ error: `unknown span ${q.get("span") ?? ""}` }, 404);
  }
  return json({ error: "not found" }, 404);
}

beforeEach(async () => {
  requests = [];
  await resetPage();
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("App", () => {
  it("selects the first run/worker/span, shows its overview and writes the hash", async () => {
    serve(standardServer);
    render(<App />);
    const util = await screen.findByTestId("gpu-utilization");
    expect(util.textContent).toBe("55.51 %");
    expect(requests).toContain("runs");
    expect(requests).toContain("overview?run=resnet50_num_workers_0&worker=worker0&span=1");
    expect(window.location.hash).toBe("#run=resnet50_num_workers_0&worker=worker0&span=1");
    expect(window.location.pathname).toBe("/data/plugin_entry.html");
    expect((screen.getByTestId("run-select") as HTMLSelectElement).value).toBe("resnet50_num_workers_0");
    expect((screen.getByTestId("worker-select") as HTMLSelectElement).value).toBe("worker0");
    expect((screen.getByTestId("span-select") as HTMLSelectElement).value).toBe("1");
  });

  it("shows per-file progress for the selected run and the overall count", async () => {
    serve(standardServer);
    render(<App />);
    const panel = await screen.findByTestId("file-progress");
    expect(panel.querySelector("summary")?.textContent).toBe("Loading traces: 3 of 5 files");
    expect(panel.hasAttribute("open")).toBe(true);
    const rows = within(panel).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.getAttribute("data-state"))).toEqual(["ready", "loading", "error"]);
    expect(rows[1]?.textContent).toContain("loading 42 %");
    const bars = within(panel).getAllByRole("progressbar").map((b) => b.getAttribute("aria-valuenow"));
    expect(bars).toEqual(["60", "100", "42", "100"]);
  });

  it("restores a selection with odd characters from the hash", async () => {
    const run = "runs/2024 05/bert #3 & friends/ñ";
    window.location.hash = new URLSearchParams({ run, worker: "host-a_123", span: "2" }).toString();
    serve(standardServer);
    render(<App />);
    await waitFor(() => expect((screen.getByTestId("run-select") as HTMLSelectElement).value).toBe(run));
    expect((screen.getByTestId("span-select") as HTMLSelectElement).value).toBe("2");
    // Span 2 is queued: a waiting message, and its overview is asked for, so the server loads it first.
    expect(await screen.findByText(/Waiting to parse/)).toBeTruthy();
    await waitFor(() => expect(requests.some((r) => r.startsWith("overview?") && r.endsWith("span=2"))).toBe(true));
  });

  it("falls back to the first run when the hash names one that does not exist", async () => {
    window.location.hash = "#run=deleted_run&worker=worker9&span=4";
    serve(standardServer);
    render(<App />);
    await screen.findByTestId("gpu-utilization");
    expect(window.location.hash).toBe("#run=resnet50_num_workers_0&worker=worker0&span=1");
  });

  it("shows a failed file's error in a card, and the rest of the UI stays", async () => {
    window.location.hash = "#run=resnet50_num_workers_0&worker=worker1&span=1";
    serve(standardServer);
    render(<App />);
    const card = await screen.findByTestId("error-card");
    expect(card.textContent).toContain("gzip stream is truncated (read 1048576 of 35123456 bytes)");
    expect(card.textContent).toContain("resnet50_num_workers_0/worker1.1623143089999.pt.trace.json.gz");
    expect(screen.getByTestId("run-select")).toBeTruthy();
    expect(screen.getByTestId("file-progress")).toBeTruthy();
  });

  it("shows an overview request that fails as an error card", async () => {
    serve((url) => (url === "runs" ? json(runsFixture) : json({ error: "analysis crashed: KeyError 'ts'" }, 500)));
    render(<App />);
    const card = await screen.findByTestId("error-card");
    expect(card.textContent).toContain("The overview could not be fetched");
    expect(card.textContent).toContain("HTTP 500: analysis crashed: KeyError 'ts'");
  });

  it("restores the last selection from sessionStorage when TensorBoard recreated the iframe without a hash", async () => {
    window.sessionStorage.setItem("kinetoscope.selection", "#run=resnet50_num_workers_0&worker=worker1&span=1");
    serve(standardServer);
    render(<App />);
    await screen.findByTestId("error-card");
    await waitFor(() => {
      expect((screen.getByTestId("worker-select") as HTMLSelectElement).value).toBe("worker1");
      expect(window.location.hash).toBe("#run=resnet50_num_workers_0&worker=worker1&span=1");
    });
  });

  it("polls while the selected file loads and fetches its overview once it is ready", async () => {
    const loadingRuns = structuredClone(runsFixture);
    const span = loadingRuns.runs[0]!.workers[0]!.spans[0]!;
    span.state = "loading";
    span.progress = 0.25;
    let runsCalls = 0;
    serve((url) => {
      if (url === "runs") {
        runsCalls += 1;
        return json(runsCalls === 1 ? loadingRuns : runsFixture);
      }
      if (url.startsWith("overview?") && runsCalls === 1) return json({ state: "loading", progress: 0.25 });
      return standardServer(url);
    });
    render(<App />);
    expect(await screen.findByText(/Parsing resnet50_num_workers_0\/worker0\.1623143089861\.pt\.trace\.json\.gz: 25 %/)).toBeTruthy();
    // the loading file is asked for (the server loads a file asked for ahead of the queue)
    await waitFor(() => expect(requests.some((r) => r.startsWith("overview?"))).toBe(true));
    const util = await screen.findByTestId("gpu-utilization", {}, { timeout: 4000 });
    expect(util.textContent).toBe("55.51 %");
    expect(runsCalls).toBe(2);
  });

  it("follows a hash edited by hand", async () => {
    serve(standardServer);
    render(<App />);
    await screen.findByTestId("gpu-utilization");
    window.location.hash = "#run=resnet50_num_workers_0&worker=worker1&span=1";
    const card = await screen.findByTestId("error-card");
    expect(card.textContent).toContain("gzip stream is truncated");
  });

  it("corrects a hand-edited hash that names nothing", async () => {
    serve(standardServer);
    render(<App />);
    await screen.findByTestId("gpu-utilization");
    window.location.hash = "#run=no_such_run";
    await waitFor(() =>
      expect(window.location.hash).toBe("#run=resnet50_num_workers_0&worker=worker0&span=1"),
    );
    expect(screen.getByTestId("gpu-utilization").textContent).toBe("55.51 %");
  });

  it("says so when the run list cannot be loaded", async () => {
    serve(() => {
      throw new TypeError("Failed to fetch");
    });
    render(<App />);
    expect(await screen.findByText(/Cannot load the run list/)).toBeTruthy();
  });

  it("says so when the logdir has no traces", async () => {
    serve(() => json({ logdir: "/empty", loading: { files_total: 0, files_done: 0 }, runs: [] }));
    render(<App />);
    expect(await screen.findByText(/No PyTorch profiler traces found under \/empty/)).toBeTruthy();
  });

  it("shows the logdir's notices as text (skipped symlinks)", async () => {
    const note = "Skipped 1 symbolic link (<b>linked</b>): links to directories are not followed.";
    serve(() => json({ logdir: "/l", loading: { files_total: 0, files_done: 0 }, runs: [], notices: [note] }));
    render(<App />);
    const shown = await screen.findByTestId("logdir-notice");
    expect(shown.textContent).toBe(note);
    expect(shown.querySelector("b")).toBeNull(); // trace-side strings are never HTML
  });
});
