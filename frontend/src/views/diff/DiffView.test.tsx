import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { RunsResponse } from "../../api/types";
import diffL1 from "../../__fixtures__/diff/diff_l1.json";
import diffL2 from "../../__fixtures__/diff/diff_l2.json";
import diffRoot from "../../__fixtures__/diff/diff_root.json";
import runsFixture from "../../__fixtures__/diff/runs.json";
import { DiffView } from "./DiffView";
import { json, resetPage, stubFetch } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string; option: { series?: { data?: unknown[] }[]; yAxis?: { data?: unknown[] } } }) => (
    <div
      data-testid={props.testId}
      data-points={JSON.stringify((props.option.series ?? []).map((s) => s.data?.length ?? 0))}
      data-labels={JSON.stringify(props.option.yAxis?.data ?? null)}
    />
  ),
}));

const runs = (runsFixture as unknown as RunsResponse).runs;
let requests: string[] = [];

function serve(): void {
  stubFetch((input) => {
    if (!input.startsWith("diff?")) return json({ error: "not found" }, 404);
    const q = new URLSearchParams(input.slice(5));
    const path = q.get("path");
    if (path === null) return json(diffRoot);
    if (path === '["ProfilerStep"]') return json(diffL1);
    if (path === '["ProfilerStep","enumerate(DataLoader)"]') return json(diffL2);
    return json({ ...diffRoot, path: JSON.parse(path), operators: [] });
  }, requests);
}

function pathOf(url: string): string | null {
  return new URLSearchParams(url.split("?")[1]).get("path");
}

beforeEach(async () => {
  requests = [];
  await resetPage("#run=nw0&worker=worker0&span=1&view=diff");
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("Diff view", () => {
  it("compares the current selection with another run and shows the step deltas", async () => {
    serve();
    render(<DiffView runs={runs} current={{ run: "nw0", worker: "worker0", span: "1" }} theme="light" />);
    const steps = await screen.findByTestId("diff-steps");
    expect(requests[0]).toBe("diff?base_run=nw0&base_worker=worker0&base_span=1&exp_run=nw4&exp_worker=worker0&exp_span=1");
    // the defaults follow the main selection and are not stored (stored, they outlived it)
    expect(window.location.hash).toBe("#run=nw0&worker=worker0&span=1&view=diff");
    expect(screen.getByTestId("diff-rule").textContent).toMatch(/^Baseline: the main selection \(nw0 · worker0 · span 1\)/);
    const dl = within(steps).getAllByTestId("diff-step-row").find((r) => r.getAttribute("data-key") === "dataloader_us")!;
    expect(within(dl).getByTestId("diff-step-delta").textContent).toBe("\u221258.08 ms");
    expect(dl.textContent).toContain("59.26 ms");
    expect(dl.textContent).toContain("\u221298.0 %");
    expect(within(dl).getByTestId("diff-step-delta").className).toBe("diff-down");
    expect(screen.getByTestId("diff-steps-chart").getAttribute("data-points")).toBe("[8,8]");
    expect((screen.getByTestId("diff-exp-run") as HTMLSelectElement).value).toBe("nw4");
  });

  it("drills down two levels with the rows and back with the breadcrumbs", async () => {
    serve();
    render(<DiffView runs={runs} current={{ run: "nw0", worker: "worker0", span: "1" }} theme="light" />);
    const rowNamed = async (name: string) =>
      (await screen.findAllByTestId("diff-op-row")).find((r) => r.getAttribute("data-name") === name);
    fireEvent.click((await rowNamed("ProfilerStep"))!);
    await waitFor(() => expect(screen.getByTestId("diff-breadcrumbs").textContent).toContain("ProfilerStep"));
    expect(pathOf(requests.at(-1)!)).toBe('["ProfilerStep"]');
    await waitFor(() => expect(screen.getAllByTestId("diff-op-row")[0]!.getAttribute("data-name")).toBe("enumerate(DataLoader)"));
    fireEvent.click((await rowNamed("enumerate(DataLoader)"))!);
    await waitFor(() => expect(pathOf(requests.at(-1)!)).toBe('["ProfilerStep","enumerate(DataLoader)"]'));
    await waitFor(() => expect(screen.getAllByTestId("diff-op-row").map((r) => r.getAttribute("data-name"))).toContain("aten::stack"));
    const crumbs = within(screen.getByTestId("diff-breadcrumbs")).getAllByTestId("diff-crumb");
    expect(crumbs.map((c) => c.textContent)).toEqual(["All operators", "ProfilerStep", "enumerate(DataLoader)"]);
    expect(new URLSearchParams(window.location.hash.slice(1)).get("diff_path")).toBe('["ProfilerStep","enumerate(DataLoader)"]');
    // status badges carry their class
    const stack = (await rowNamed("aten::stack"))!;
    expect(within(stack).getByTestId("diff-status").className).toBe("diff-badge diff-badge-removed");
    // a leaf row does not drill
    const before = requests.length;
    fireEvent.click((await rowNamed("aten::view"))!);
    expect(requests.length).toBe(before);
    // the waterfall has one bar per row, the remainder (a server that sends its totals) and the total
    const wf = screen.getByTestId("diff-waterfall");
    const bars = diffL2.operators.length + ("waterfall" in diffL2 ? 2 : 1);
    expect(JSON.parse(wf.getAttribute("data-points")!)).toEqual([bars, bars]);
    // back to the first level
    fireEvent.click(crumbs[1]!);
    await waitFor(() => expect(pathOf(requests.at(-1)!)).toBe('["ProfilerStep"]'));
    fireEvent.click(within(screen.getByTestId("diff-breadcrumbs")).getAllByTestId("diff-crumb")[0]!);
    await waitFor(() => expect(pathOf(requests.at(-1)!)).toBeNull());
    expect(window.location.hash).not.toContain("diff_path");
  });

  it("follows the main selection unless sides were picked under it", async () => {
    // the trial: after Diff on another run, opening Diff on run X compared two other runs
    serve();
    const nw0 = { run: "nw0", worker: "worker0", span: "1" };
    const nw4 = { run: "nw4", worker: "worker0", span: "1" };
    const { rerender, unmount } = render(<DiffView runs={runs} current={nw0} theme="light" />);
    await screen.findByTestId("diff-steps");
    expect((screen.getByTestId("diff-base-run") as HTMLSelectElement).value).toBe("nw0");
    // the main selection moves to nw4: the baseline follows
    rerender(<DiffView runs={runs} current={nw4} theme="light" />);
    await waitFor(() => expect(requests.at(-1)).toBe("diff?base_run=nw4&base_worker=worker0&base_span=1&exp_run=nw0&exp_worker=worker0&exp_span=1"));
    // a pick under nw4 (swap) is stored with the selection it was made under and kept while it stays
    fireEvent.click(screen.getByTestId("diff-swap"));
    await waitFor(() => expect(requests.at(-1)).toBe("diff?base_run=nw0&base_worker=worker0&base_span=1&exp_run=nw4&exp_worker=worker0&exp_span=1"));
    expect(new URLSearchParams(window.location.hash.slice(1)).get("diff_for")).toBe('["nw4","worker0","1"]');
    expect(screen.getByTestId("diff-rule").textContent).toContain("kept (and in the URL) while the main selection is nw4 · worker0 · span 1");
    unmount();
    render(<DiffView runs={runs} current={nw4} theme="light" />);
    await screen.findByTestId("diff-steps");
    expect((screen.getByTestId("diff-base-run") as HTMLSelectElement).value).toBe("nw0");
    cleanup();
    // reopened under another main selection, the old pick (still in the hash) does not apply
    render(<DiffView runs={runs} current={{ run: "composer", worker: "rank0", span: "1" }} theme="light" />);
    await waitFor(() => expect(requests.at(-1)).toMatch(/^diff\?base_run=composer&base_worker=rank0&base_span=1&exp_run=nw/));
    expect((screen.getByTestId("diff-base-run") as HTMLSelectElement).value).toBe("composer");
    expect(screen.getByTestId("diff-rule").textContent).toMatch(/^Baseline: the main selection \(composer · rank0 · span 1\)/);
    cleanup();
    // and "Use the main selection" forgets a pick
    render(<DiffView runs={runs} current={nw4} theme="light" />);
    fireEvent.click(await screen.findByTestId("diff-follow-main"));
    await waitFor(() => expect((screen.getByTestId("diff-base-run") as HTMLSelectElement).value).toBe("nw4"));
    expect(window.location.hash).toBe("#run=nw0&worker=worker0&span=1&view=diff");
  });

  it("states the thresholds in a tooltip", async () => {
    serve();
    render(<DiffView runs={runs} current={{ run: "nw0", worker: "worker0", span: "1" }} theme="light" />);
    const card = await screen.findByTestId("diff-operators");
    const tip = within(card).getByRole("tooltip").textContent ?? "";
    expect(tip).toMatch(/by more than 10 \u00b5s and more than 5 % of the baseline/);
    expect(tip).toMatch(/host total per step/);
    expect(tip).toMatch(/ends at the step-total \u0394/);
  });

  it("restores both sides from the hash and changes a side with the pickers", async () => {
    window.history.replaceState(
      null,
      "",
      "/data/plugin_entry.html#run=nw0&worker=worker0&span=1&view=diff&base_run=nw4&base_worker=worker0&base_span=2&exp_run=nw0&exp_worker=worker0&exp_span=2",
    );
    await new Promise((resolve) => setTimeout(resolve, 0));
    serve();
    render(<DiffView runs={runs} current={{ run: "nw0", worker: "worker0", span: "1" }} theme="light" />);
    await screen.findByTestId("diff-steps");
    expect(requests[0]).toBe("diff?base_run=nw4&base_worker=worker0&base_span=2&exp_run=nw0&exp_worker=worker0&exp_span=2");
    fireEvent.change(screen.getByTestId("diff-exp-span"), { target: { value: "1" } });
    await waitFor(() => expect(requests.at(-1)).toBe("diff?base_run=nw4&base_worker=worker0&base_span=2&exp_run=nw0&exp_worker=worker0&exp_span=1"));
    expect(window.location.hash).toContain("exp_span=1");
    fireEvent.click(screen.getByTestId("diff-swap"));
    await waitFor(() => expect(requests.at(-1)).toBe("diff?base_run=nw0&base_worker=worker0&base_span=1&exp_run=nw4&exp_worker=worker0&exp_span=2"));
  });

  it("filters the kernel table", async () => {
    serve();
    render(<DiffView runs={runs} current={{ run: "nw0", worker: "worker0", span: "1" }} theme="light" />);
    const card = await screen.findByTestId("diff-kernels");
    const total = within(card).getAllByTestId("diff-kernel-row").length;
    expect(total).toBe(diffRoot.kernels.length);
    fireEvent.change(within(card).getByTestId("diff-kernel-search"), { target: { value: "sgemm" } });
    const rows = within(card).getAllByTestId("diff-kernel-row");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(total);
    expect(rows.every((r) => /sgemm/i.test(r.textContent ?? ""))).toBe(true);
  });
});
