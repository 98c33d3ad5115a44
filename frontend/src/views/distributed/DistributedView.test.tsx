import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import distFixture from "../../__fixtures__/distributed/distributed_dlrm.json";
import distNull from "../../__fixtures__/distributed/distributed_null.json";
import distFsdpTp from "../../__fixtures__/distributed/distributed_fsdp_tp.json";
import distSingle from "../../__fixtures__/distributed/distributed_single_rank.json";
import overviewRank0 from "../../__fixtures__/distributed/overview_dlrm_rank0.json";
import { DistributedView } from "./DistributedView";
import { json, notFound, query, stubFetch, stubFetchEachTest } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string; ariaLabel: string; option: { xAxis?: { data?: string[] }; series?: { name?: string }[] } }) => (
    <div
      data-testid={props.testId ?? "echart"}
      aria-label={props.ariaLabel}
      data-x={JSON.stringify(props.option.xAxis?.data ?? [])}
      data-series={JSON.stringify((props.option.series ?? []).map((s) => s.name))}
    />
  ),
}));

const requests = stubFetchEachTest((url) => {
  if (url.startsWith("distributed?")) {
    const span = query(url).get("span");
    // the real job has one span; span 2 is the server's real "view: null" answer
    return json(span === "1" ? { ...distFixture, spans: ["1", "2"] } : { ...distNull, spans: ["1", "2"] });
  }
  if (url.startsWith("overview?")) {
    const worker = query(url).get("worker") ?? "";
    const rank = Number(worker.replace(/^worker(\d+).*$/, "$1"));
    return json({
      ...overviewRank0,
      worker,
      configuration: { ...overviewRank0.configuration, distributed: { backend: "nccl", rank, world_size: 8 } },
    });
  }
  return notFound();
});

describe("DistributedView", () => {
  it("lists every rank and puts the straggler badge on exactly the API's stragglers", async () => {
    render(<DistributedView run="job" theme="light" />);
    const rows = await screen.findAllByTestId("rank-row");
    expect(rows).toHaveLength(8);
    const withBadge = rows.filter((r) => within(r).queryByTestId("straggler-badge") !== null).map((r) => Number(r.dataset.rank));
    expect(withBadge).toEqual(distFixture.view.stragglers);
    // the straggler rule: the rank that arrives last (rank 7), not the ranks with long steps that waited (1, 3, 4, 5)
    expect(withBadge).toEqual([7]);
    // the badge sits in the rank cell (first column) and carries the evidence
    const badge = within(rows[7]!).getByTestId("straggler-badge");
    expect(badge.closest("td")).toBe(rows[7]!.querySelector("td"));
    expect(badge.getAttribute("title")).toMatch(/^rank 7: last at 5 of 8 collective instances/);
    // rank 0's numbers, formatted; it was never last
    const cells = Array.from(rows[0]!.querySelectorAll("td")).map((td) => td.textContent);
    expect(cells).toEqual(["0", "worker0_step_12", "773 µs", "261 µs", "5.54 ms", "7.88 ms", "14.46 ms", "217 µs", "5.58 ms", "5.80 ms", "0 / 8", "\u2013"]);
    const last = Array.from(rows[7]!.querySelectorAll("td")).map((td) => td.textContent);
    expect(last.slice(-2)).toEqual(["5 / 8", "1.02 ms"]);
    // the evidence in words above the table
    const evidence = screen.getAllByTestId("straggler-evidence").map((e) => e.textContent);
    expect(evidence).toEqual([
      "Straggler rank 7: last at 5 of 8 collective instances (alltoall 4 of 5, allreduce 1 of 3); the others waited 1.02 ms on average for it (5.08 ms in all)",
    ]);
  });

  it("says how collectives were matched, per type", async () => {
    render(<DistributedView run="job" theme="light" />);
    const summary = await screen.findByTestId("matching-summary");
    expect(summary.textContent).toBe("Matched by order: allreduce 3 matched, 0 unmatched · alltoall 5 matched, 0 unmatched");
  });

  it("asks for span 1 first and for the chosen span after", async () => {
    render(<DistributedView run="job" theme="light" />);
    await screen.findAllByTestId("rank-row");
    expect(requests.filter((u) => u.startsWith("distributed?"))).toEqual(["distributed?run=job&span=1"]);
    fireEvent.change(screen.getByTestId("dist-span-select"), { target: { value: "2" } });
    await screen.findByTestId("distributed-null");
    expect(requests.filter((u) => u.startsWith("distributed?")).at(-1)).toBe("distributed?run=job&span=2");
  });

  it("shows a clear message and the server's messages when view is null", async () => {
    render(<DistributedView run="job" theme="light" initialSpan="2" />);
    const msg = await screen.findByTestId("distributed-null");
    expect(msg.textContent).toBe("No distributed view for run job at span 2: only one file (one rank) has this span. Other spans of this run: 1.");
    // the server's reason is not repeated as a warning next to the notice
    expect(screen.queryByText(/only one rank \(file\) in this run has this span/)).toBeNull();
    expect(screen.queryByTestId("rank-table")).toBeNull();
  });

  it("counts ranks that loaded, not files listed, when every file of the span failed", async () => {
    // the trial's run "bad": five files at span 1, none loaded; it said "fewer than two ranks have this
    // span. Spans with two or more ranks: 1."
    const failures = ["bad/badjson.pt.trace.json: not analysed (invalid JSON: Input data was truncated)", "bad/empty.pt.trace.json: not analysed (file is empty (0 bytes))"];
    vi.stubGlobal("fetch", async () =>
      json({ state: "ready", run: "bad", span: "1", spans: ["1"], files: 5, ranks_loaded: 0, reason_code: "ranks_failed", reason: "5 of the 5 files of span 1 failed to load, leaving 0 ranks: there is nothing to compare across ranks", view: null, messages: failures }),
    );
    render(<DistributedView run="bad" theme="light" />);
    const msg = await screen.findByTestId("distributed-null");
    expect(msg.textContent).toBe("No distributed view for run bad at span 1: 5 of 5 files of span 1 failed to load, leaving 0 ranks; comparing needs two.");
    expect(msg.textContent).not.toMatch(/Spans with two or more ranks/);
    expect(screen.getByText(failures[0]!)).toBeTruthy();
    expect(screen.getAllByText(/failed to load/)).toHaveLength(1);
  });

  it("renders collectives with units, bandwidths and definitions", async () => {
    render(<DistributedView run="job" theme="light" />);
    const table = await screen.findByTestId("collectives-table");
    const rows = within(table).getAllByTestId("collective-row").map((r) => Array.from(r.querySelectorAll("td")).map((td) => td.textContent));
    expect(rows[0]).toEqual(["allreduce", "3", "2.4 MiB", "8", "175 µs", "1.15 ms", "14.20 GB/s", "24.85 GB/s"]);
    const tips = within(table).getAllByRole("tooltip").map((t) => t.textContent ?? "");
    expect(tips.some((t) => t.includes("minimum duration of a collective instance across ranks"))).toBe(true);
    expect(tips.some((t) => t.includes("2(n−1)/n"))).toBe(true);
  });

  it("shows the selected rank's communication ops", async () => {
    render(<DistributedView run="job" theme="light" />);
    await screen.findAllByTestId("rank-row");
    fireEvent.change(screen.getByTestId("comm-rank-select"), { target: { value: "3" } });
    const ops = within(screen.getByTestId("comm-ops-table")).getAllByTestId("comm-op-row");
    const rank3 = distFixture.view.ranks.find((r) => r.rank === 3)!;
    expect(ops).toHaveLength(rank3.comm_ops.length);
    expect(ops[0]!.querySelector("td")!.textContent).toBe(rank3.comm_ops[0]!.name);
  });

  it("shows each rank's devices from the distributed answer, with no per-rank request", async () => {
    render(<DistributedView run="job" theme="light" />);
    const table = await screen.findByTestId("device-table");
    const rows = within(table).getAllByTestId("device-row");
    expect(rows).toHaveLength(8);
    expect(rows[0]!.textContent).toContain("Tesla V100-SXM2-32GB");
    expect(rows[0]!.textContent).toContain("31.74 GiB");
    expect(rows[0]!.textContent).toContain("45.46 %");
    expect(rows[7]!.textContent).toContain("nccl");
    expect(requests.filter((u) => !u.startsWith("distributed?"))).toEqual([]);
  });

  it("charts one bar per rank", async () => {
    render(<DistributedView run="job" theme="light" />);
    const chart = await screen.findByTestId("rank-breakdown-chart");
    expect(JSON.parse(chart.dataset.x ?? "[]")).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    expect(JSON.parse(chart.dataset.series ?? "[]")).toEqual(["Computation only", "Overlap", "Communication only", "Other"]);
  });
  it("shows the job's process groups between the charts and the collectives", async () => {
    stubFetch((url) => (url.startsWith("distributed?") ? json(distFsdpTp) : notFound()));
    render(<DistributedView run="job" theme="light" />);
    const card = await screen.findByTestId("groups-card");
    const rows = within(card).getAllByTestId("group-row");
    expect(rows.map((r) => within(r).getByTestId("group-role").textContent)).toEqual(["FSDP shard", "FSDP shard", "TP", "TP"]);
    expect(distFsdpTp.view.groups.map((g) => g.name)).toEqual(rows.map((r) => r.dataset.group));
  });

  it("shows a single-rank run's own process groups and critical path", async () => {
    stubFetch((url) => (url.startsWith("distributed?") ? json(distSingle) : notFound()));
    render(<DistributedView run="one" theme="light" />);
    const own = await screen.findByTestId("single-rank");
    expect(screen.getByTestId("distributed-null").textContent).toContain("only one file");
    const card = within(own).getByTestId("groups-card");
    expect(card.textContent).toContain("Process groups of rank 3");
    const rows = within(card).getAllByTestId("group-row");
    expect(rows.map((r) => r.dataset.group)).toEqual(distSingle.single_rank.groups.map((g) => g.name));
    expect(rows.map((r) => within(r).getByTestId("group-role").textContent)).toEqual(["FSDP shard", "TP"]);
    const path = within(own).getByTestId("critical-path");
    expect(within(path).getByTestId("path-summary").textContent).toMatch(/^411 µs/);
    expect(within(path).getAllByTestId("path-segment-row").every((r) => r.dataset.rank === "3")).toBe(true);
  });

  it("shows the run's advice that holds on several ranks, as the server words it", async () => {
    render(<DistributedView run="job" theme="light" />);
    const items = await screen.findAllByTestId("run-advice");
    expect(items.map((i) => i.textContent)).toEqual((distFixture.recommendations ?? []).map((r) => r.text));
    expect(items[0]!.textContent).toMatch(/^Ranks 0–7: /);
  });

  it("asks for a step's detail when the answer left it out, and draws the ranks left out as other ranks", async () => {
    const [first] = distFixture.view.critical_path;
    const { segments, collectives: _collectives, top_items, ...summary } = first!;
    const other = { ...summary, step: "11", detailed: false, by_rank_other: { ranks: 3, us: 5.0 } };
    const doc = { ...distFixture, view: { ...distFixture.view, critical_path: [first, other], critical_path_total: 2 } };
    const detailed = { ...first, step: "11", detailed: true, segments: segments.slice(0, 1), collectives: [], top_items };
    const log = stubFetch((url) => {
      if (!url.startsWith("distributed?")) return notFound();
      const step = query(url).get("step");
      return json(step === "11" ? { ...doc, view: { ...doc.view, critical_path: [summary, detailed] } } : doc);
    });
    render(<DistributedView run="job" theme="light" />);
    const path = await screen.findByTestId("critical-path");
    expect(JSON.parse(within(path).getByTestId("path-rank-chart").dataset.series ?? "[]")).toContain("Other ranks");
    expect(within(path).getAllByTestId("path-segment-row")).toHaveLength(segments.length);
    fireEvent.change(within(path).getByTestId("path-step-select"), { target: { value: "11" } });
    await waitFor(() => expect(within(path).getAllByTestId("path-segment-row")).toHaveLength(1));
    expect(log.some((u) => query(u).get("step") === "11")).toBe(true);
  });
});
