import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { beforeEach, describe, expect, it } from "vitest";
import type { HangEntriesResponse, HangFinding, HangResponse, HangTraceLink } from "../../api/types";
import { instanceText, stepText } from "./FindingTraces";
import { HangView, rankList } from "./HangView";
import { json, query, stubFetch } from "../../testing/fetch";

// the hang and hang_entries answers of samples/fr_gloo_skip (real Gloo dumps: rank 3 skipped pair_b's all_reduce)
const HANG: HangResponse = {"ranks": [{"rank": 0, "path": "fr_gloo_skip/nccl_trace_rank_0", "rank_from": "name", "version": "2.10", "entries": 11, "states_tracked": false, "timing": false, "wrapped": false}, {"rank": 1, "path": "fr_gloo_skip/nccl_trace_rank_1", "rank_from": "name", "version": "2.10", "entries": 11, "states_tracked": false, "timing": false, "wrapped": false}, {"rank": 2, "path": "fr_gloo_skip/nccl_trace_rank_2", "rank_from": "name", "version": "2.10", "entries": 10, "states_tracked": false, "timing": false, "wrapped": false}, {"rank": 3, "path": "fr_gloo_skip/nccl_trace_rank_3", "rank_from": "name", "version": "2.10", "entries": 10, "states_tracked": false, "timing": false, "wrapped": false}], "groups": [{"pg_name": "1", "pg_desc": "pair_a", "ranks": [0, 1], "ranks_from": "dumps", "pg_id": 1, "per_rank": [{"rank": 0, "dump": "read", "last_enqueued": {"collective_seq_id": 4, "op": "all_reduce"}, "last_started": null, "last_completed": null}, {"rank": 1, "dump": "read", "last_enqueued": {"collective_seq_id": 4, "op": "all_reduce"}, "last_started": null, "last_completed": null}], "stuck": null}, {"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3], "ranks_from": "dumps", "pg_id": 0, "per_rank": [{"rank": 0, "dump": "read", "last_enqueued": {"collective_seq_id": 7, "op": "all_reduce"}, "last_started": null, "last_completed": null}, {"rank": 1, "dump": "read", "last_enqueued": {"collective_seq_id": 7, "op": "all_reduce"}, "last_started": null, "last_completed": null}, {"rank": 2, "dump": "read", "last_enqueued": {"collective_seq_id": 6, "op": "broadcast"}, "last_started": null, "last_completed": null}, {"rank": 3, "dump": "read", "last_enqueued": {"collective_seq_id": 7, "op": "all_reduce"}, "last_started": null, "last_completed": null}], "stuck": {"collective_seq_id": 7, "op": "all_reduce", "ranks_present": [0, 1, 3], "missing_ranks": [2], "unknown_ranks": [], "ranks_without_dump": []}}, {"pg_name": "2", "pg_desc": "pair_b", "ranks": [2, 3], "ranks_from": "dumps", "pg_id": 1, "per_rank": [{"rank": 2, "dump": "read", "last_enqueued": {"collective_seq_id": 4, "op": "all_reduce"}, "last_started": null, "last_completed": null}, {"rank": 3, "dump": "read", "last_enqueued": {"collective_seq_id": 3, "op": "all_reduce"}, "last_started": null, "last_completed": null}], "stuck": {"collective_seq_id": 4, "op": "all_reduce", "ranks_present": [2], "missing_ranks": [3], "unknown_ranks": [], "ranks_without_dump": []}}], "findings": [{"kind": "missing_ranks", "pg_name": "2", "pg_desc": "pair_b", "op": "all_reduce", "collective_seq_id": 4, "sizes": "[[[128]],[[128]]]", "dtype": "[[\"Float\"],[\"Float\"]]", "ranks_present": [2], "missing_ranks": [3], "detail": "rank 3 never enqueued all_reduce #4; rank 2 did", "explained_by": null, "root_cause": true, "sentence": "Rank 3 never entered all_reduce #4 of pair_b (pg 2, ranks 2, 3); rank 2 waits in it.", "trace_ranks": [2, 3]}, {"kind": "missing_ranks", "pg_name": "0", "pg_desc": "default_pg", "op": "all_reduce", "collective_seq_id": 7, "sizes": "[[[512]],[[512]]]", "dtype": "[[\"Float\"],[\"Float\"]]", "ranks_present": [0, 1, 3], "missing_ranks": [2], "detail": "rank 2 never enqueued all_reduce #7; ranks 0, 1, 3 did", "explained_by": 0, "root_cause": false, "sentence": "Rank 2 never entered all_reduce #7 of default_pg (pg 0, ranks 0\u20133); ranks 0, 1, 3 wait in it (rank 2 is held in all_reduce #4 of pair_b (pg 2, ranks 2, 3)).", "trace_ranks": [0, 1, 2, 3]}], "unreadable": [], "verdict": ["Rank 3 never entered all_reduce #4 of pair_b (pg 2, ranks 2, 3); rank 2 waits in it.", "Rank 2 never entered all_reduce #7 of default_pg (pg 0, ranks 0\u20133); ranks 0, 1, 3 wait in it (rank 2 is held in all_reduce #4 of pair_b (pg 2, ranks 2, 3))."], "traces": {"0": {"path": "fr_gloo_skip/rank0.1.pt.trace.json.gz", "worker": "rank0", "span": "1"}, "1": {"path": "fr_gloo_skip/rank1.1.pt.trace.json.gz", "worker": "rank1", "span": "1"}, "2": {"path": "fr_gloo_skip/rank2.1.pt.trace.json.gz", "worker": "rank2", "span": "1"}, "3": {"path": "fr_gloo_skip/rank3.1.pt.trace.json.gz", "worker": "rank3", "span": "1"}}, "dumps": 4, "state": "ready", "run": "fr_gloo_skip"};
// created_ns are nanosecond timestamps past 2^53: the literal rounds as JSON.parse rounds the server's answer
// eslint-disable-next-line no-loss-of-precision
const ENTRIES: HangEntriesResponse = {"rank": 3, "path": "fr_gloo_skip/nccl_trace_rank_3", "entries_total": 10, "entries": [{"record_id": 8, "pg_name": "0", "pg_desc": "default_pg", "pg_id": 0, "collective_seq_id": 6, "p2p_seq_id": 0, "op": "gloo:broadcast", "state": "scheduled", "sizes": "[[[256]],[[256]]]", "dtypes": "[[\"Float\"],[\"Float\"]]", "created_ns": 1795919371738128614, "started_ns": null, "completed_ns": null, "frames": ["broadcast (/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:3145)", "wrapper (/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py:83)"]}, {"record_id": 9, "pg_name": "0", "pg_desc": "default_pg", "pg_id": 0, "collective_seq_id": 7, "p2p_seq_id": 0, "op": "gloo:all_reduce", "state": "scheduled", "sizes": "[[[512]],[[512]]]", "dtypes": "[[\"Float\"],[\"Float\"]]", "created_ns": 1795919371746993122, "started_ns": null, "completed_ns": null, "frames": ["all_reduce (/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:3245)", "wrapper (/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py:83)"]}], "state": "ready", "run": "fr_gloo_skip"};
// in_traces and trace_note of the first finding of `kinetoscope hang --json` on the synthetic job of
// tests/unit/analysis/test_hang_trace_links.py (rank 3 never enters all_reduce #4 of group 2; both ranks left a trace)
const LINKED = {"in_traces": {"2": {"last_seq": 4, "has_instance": true, "instance": {"collective": "allreduce", "ts_us": 400.0, "dur_us": 20.0}, "last_step": {"name": "1", "start_us": -10.0, "end_us": 421.0, "top_ops": [{"name": "record_param_comms", "dur_us": 2.0}, {"name": "record_param_comms", "dur_us": 2.0}, {"name": "record_param_comms", "dur_us": 2.0}], "collectives": [{"collective": "allreduce", "group": "2", "seq": 2}, {"collective": "allreduce", "group": "2", "seq": 3}, {"collective": "allreduce", "group": "2", "seq": 4}]}}, "3": {"last_seq": 3, "has_instance": false, "instance": null, "last_step": {"name": "1", "start_us": -10.0, "end_us": 890.0, "top_ops": [{"name": "aten::index_select", "dur_us": 500.0}, {"name": "record_param_comms", "dur_us": 2.0}, {"name": "record_param_comms", "dur_us": 2.0}], "collectives": [{"collective": "allreduce", "group": "2", "seq": 1}, {"collective": "allreduce", "group": "2", "seq": 2}, {"collective": "allreduce", "group": "2", "seq": 3}]}}}, "trace_note": "Rank 3's trace ends before all_reduce #4 (its last Seq in group 2 is 3); in its last recorded step (step 1) its longest ops were aten::index_select (500 \u00b5s), record_param_comms (2 \u00b5s), record_param_comms (2 \u00b5s) and its last collectives allreduce #1, allreduce #2, allreduce #3; the traces of rank 2 have it (allreduce, 20 \u00b5s on rank 2)."} satisfies Pick<HangFinding, "in_traces" | "trace_note"> & { in_traces: Record<string, HangTraceLink>; trace_note: string };
let requests: string[] = [];

beforeEach(() => {
  requests = stubFetch((url) => {
    if (url.startsWith("hang?")) return json(HANG);
    if (url.startsWith("hang_entries?")) return json({ ...ENTRIES, rank: Number(query(url).get("rank")) });
    return new Response("{}", { status: 404 });
  });
});

describe("Hang view", () => {
  it("shows the verdict root cause first, the groups' stuck instances and the suspect rank's entries", async () => {
    render(<HangView run="fr_gloo_skip" />);
    const sentences = await screen.findAllByTestId("hang-sentence");
    expect(sentences[0]!.textContent).toBe("Rank 3 never entered all_reduce #4 of pair_b (pg 2, ranks 2, 3); rank 2 waits in it.");
    expect(sentences).toHaveLength(2);
    const stuck = screen.getAllByTestId("hang-stuck").map((n) => n.textContent);
    expect(stuck).toContain("Stuck at all_reduce #4: present 2; missing 3");
    expect(screen.getAllByTestId("hang-finding-row")[0]!.textContent).toContain("(root cause)");
    // the root cause's missing rank is shown first; its frames open under the row
    await waitFor(() => expect(requests.some((u) => u.startsWith("hang_entries?") && u.includes("rank=3"))).toBe(true));
    expect((await screen.findAllByTestId("hang-entry-row")).length).toBe(2);
  });

  it("opens another rank's entries from a finding", async () => {
    render(<HangView run="fr_gloo_skip" />);
    const links = await screen.findAllByTestId("hang-rank-link");
    fireEvent.click(links[1]!);
    await waitFor(() => expect(requests.some((u) => u.includes("rank=2"))).toBe(true));
  });

  it("says where a loaded trace of a rank stands", async () => {
    const traced: HangResponse = {
      ...HANG,
      traces: { "3": { path: "job/rank3.1.pt.trace.json.gz", worker: "rank3", span: "1" } },
      findings: HANG.findings.map((f, i) =>
        i === 0 ? { ...f, trace_ranks: [3], in_traces: { "3": { last_seq: 3, has_instance: false, last_step: null } } } : f,
      ),
    };
    stubFetch((url) => (url.startsWith("hang?") ? json(traced) : json({ ...ENTRIES, rank: Number(query(url).get("rank")) })));
    render(<HangView run="fr_traced" onOpenTrace={() => undefined} />);
    await screen.findAllByTestId("hang-sentence");
    const links = screen.getAllByTestId("hang-trace-link").map((n) => n.textContent);
    expect(links[0]).toBe("rank 3 (ends at #3)");
  });

  it("shows under a finding what its ranks' traces say, and nothing for a finding without links", async () => {
    const linked: HangResponse = {
      ...HANG,
      traces: { "2": { path: "job/rank2.1.pt.trace.json", worker: "rank2", span: "1" }, "3": { path: "job/rank3.1.pt.trace.json", worker: "rank3", span: "1" } },
      findings: HANG.findings.map((f, i) => (i === 0 ? { ...f, ...LINKED } : f)),
    };
    stubFetch((url) => (url.startsWith("hang?") ? json(linked) : json({ ...ENTRIES, rank: Number(query(url).get("rank")) })));
    render(<HangView run="fr_traced" />);
    const note = await screen.findByTestId("hang-trace-note");
    expect(note.textContent).toBe(LINKED.trace_note);
    // the suspect first
    const rows = screen.getAllByTestId("hang-trace-rank").map((n) => Array.from(n.children).map((c) => c.textContent));
    expect(rows).toEqual([
      ["3 (suspect)", "not in its trace (last Seq 3)", "step 1: aten::index_select (500 \u00b5s), record_param_comms (2.00 \u00b5s), record_param_comms (2.00 \u00b5s)"],
      ["2", "allreduce at 400 \u00b5s, 20 \u00b5s", "step 1: record_param_comms (2.00 \u00b5s), record_param_comms (2.00 \u00b5s), record_param_comms (2.00 \u00b5s)"],
    ]);
    // the second finding has no links: closed, and opened it says so
    expect(screen.getAllByTestId("hang-traces")).toHaveLength(1);
    fireEvent.click(screen.getAllByRole("button", { name: "Expand" })[0]!);
    expect(screen.getByTestId("hang-trace-none").textContent).toBe("No loaded trace of its ranks.");
    expect(screen.getByTestId("hang-page").textContent ?? "").not.toMatch(/null|NaN|undefined/);
  });

  it("shows an unreadable trace as a notice and strings from traces as text", async () => {
    const rank3 = LINKED.in_traces["3"]!;
    const odd = { ...rank3, last_seq: -1, last_step: { ...rank3.last_step!, name: "<b>step</b>", top_ops: [{ name: "<img src=x>", dur_us: 1.5 }] } };
    const broken: HangResponse = {
      ...HANG,
      trace_errors: [{ rank: 2, path: "job/rank2.1.pt.trace.json", error: "not JSON: <script>x</script>" }],
      findings: HANG.findings.map((f, i) => (i === 0 ? { ...f, in_traces: { "3": odd } } : f)),
    };
    stubFetch((url) => (url.startsWith("hang?") ? json(broken) : json({ ...ENTRIES, rank: Number(query(url).get("rank")) })));
    render(<HangView run="fr_broken" />);
    const card = await screen.findByTestId("hang-trace-errors");
    expect(card.querySelector(".notice")?.textContent).toBe("Rank 2's trace job/rank2.1.pt.trace.json could not be linked: not JSON: <script>x</script>");
    expect(card.querySelector("script")).toBeNull();
    // no note without trace_note; a trace without Seq of the group; markup in names stays text
    expect(screen.queryByTestId("hang-trace-note")).toBeNull();
    const cells = Array.from(screen.getByTestId("hang-trace-rank").children).map((c) => c.textContent);
    expect(cells).toEqual(["3 (suspect)", "not in its trace (no Seq of the group)", "<b>step</b>: <img src=x> (1.50 \u00b5s)"]);
    expect(screen.getByTestId("hang-page").querySelector("img, b")).toBeNull();
  });

  it("says a trace whose Seqs pass the instance without its kernel lacks it", () => {
    expect(instanceText({ last_seq: 9, has_instance: true, instance: null, last_step: null })).toBe("not in its trace (its Seqs go on to 9)");
    expect(stepText(null)).toBe("");
    expect(stepText({ name: "ProfilerStep#3", collectives: [] })).toBe("ProfilerStep#3");
  });

  it("lists ranks compactly", () => {
    expect(rankList([])).toBe("–");
    expect(rankList(Array.from({ length: 20 }, (_, i) => i))).toBe("0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 … and 4 more");
  });
});
