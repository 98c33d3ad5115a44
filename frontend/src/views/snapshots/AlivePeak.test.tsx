import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { beforeEach, describe, expect, it } from "vitest";
import type { SnapshotAttributionReady } from "../../api/types";
import { json, stubFetch } from "../../testing/fetch";
import { AlivePeak } from "./AlivePeak";

const MIB = 1 << 20;
const row = (name: string, bytes: number, allocations = 1, stack = 0) => ({ name, bytes, allocations, stack });
const WITH_TRACE: SnapshotAttributionReady = {
  state: "ready", path: "job/rank0_memory_snapshot.pickle", device: "GPU0", peak_active_bytes: 40 * MIB, alive_bytes: 40 * MIB, allocations: 4,
  trace: { worker: "host", span: "", path: "job/host.pt.trace.json", overlap_us: 1960 },
  by_operator: [row("aten::empty", 32 * MIB), row("aten::addmm", 5 * MIB, 2, 3), row("(before history)", 3 * MIB, 1, -1)],
  by_step: [row("ProfilerStep#2", 37 * MIB, 3), row("(before history)", 3 * MIB, 1, -1)],
  by_module: [row("(no module)", 32 * MIB), row("Linear_0", 5 * MIB, 2), row("(before history)", 3 * MIB, 1, -1)],
  by_frame: [row("/w/model.py:40:empty", 32 * MIB), row("/w/model.py:10:linear_fwd", 5 * MIB, 2), row("/w/train.py:12:build_model", 3 * MIB, 1, 2)],
};
let answer: SnapshotAttributionReady = WITH_TRACE;
let requests: string[] = [];

beforeEach(() => {
  answer = WITH_TRACE;
  requests = stubFetch((url) => {
    if (url.startsWith("snapshot_attribution?")) return json(answer);
    if (url.startsWith("snapshot_stack?")) return json({ state: "ready", frames: [{ filename: "/w/model.py", line: 10, name: "linear_fwd" }] });
    return new Response("{}", { status: 404 });
  });
});

const cells = (r: HTMLElement) => Array.from(r.querySelectorAll("td")).map((c) => c.textContent);

describe("alive at the peak", () => {
  it("shows the bytes by operator with the matched trace, and by step, module and frame on request", async () => {
    render(<AlivePeak artifact={{ run: "job", path: WITH_TRACE.path }} device={0} />);
    const rows = await screen.findAllByTestId("snapshot-alive-row");
    expect(requests[0]).toContain("device=0");
    expect(cells(rows[0]!)).toEqual(expect.arrayContaining(["aten::empty", "32.0 MiB", "80.0 %", "1"]));
    expect(cells(rows[1]!)).toEqual(expect.arrayContaining(["aten::addmm", "5.0 MiB", "12.5 %", "2"]));
    expect(screen.getByTestId("snapshot-alive-trace").textContent).toContain("job/host.pt.trace.json");
    const select = screen.getByTestId("snapshot-alive-grouping") as HTMLSelectElement;
    expect(Array.from(select.options).map((o) => o.textContent)).toEqual(["Operator", "Step", "Module", "Top frame"]);
    fireEvent.change(select, { target: { value: "by_step" } });
    expect(cells(screen.getAllByTestId("snapshot-alive-row")[0]!)).toEqual(expect.arrayContaining(["ProfilerStep#2", "37.0 MiB"]));
    fireEvent.change(select, { target: { value: "by_module" } });
    expect(cells(screen.getAllByTestId("snapshot-alive-row")[1]!)).toEqual(expect.arrayContaining(["Linear_0", "5.0 MiB"]));
  });

  it("groups by frame alone without a matching trace, and opens a row's stack", async () => {
    answer = { ...WITH_TRACE, trace: null, by_operator: null, by_step: null, by_module: null };
    render(<AlivePeak artifact={{ run: "job", path: WITH_TRACE.path }} device={0} />);
    const rows = await screen.findAllByTestId("snapshot-alive-row");
    expect(cells(rows[0]!)).toEqual(expect.arrayContaining(["/w/model.py:40:empty", "32.0 MiB"]));
    const select = screen.getByTestId("snapshot-alive-grouping") as HTMLSelectElement;
    expect(Array.from(select.options).map((o) => o.value)).toEqual(["by_frame"]);
    expect(screen.getByTestId("snapshot-alive-trace").textContent).toContain("No trace of this run matches");
    fireEvent.click(rows[1]!.querySelector("button") ?? rows[1]!);
    await waitFor(() => expect(requests.some((u) => u.startsWith("snapshot_stack?") && u.includes("stack=0"))).toBe(true));
  });
});
