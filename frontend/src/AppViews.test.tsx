// The view tabs: the view lives in the hash next to the selection, and the Module tab exists only
// when the trace has module information.
import { fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import kernelsFixture from "./__fixtures__/kernels_resnet50.json";
import modulesFixture from "./__fixtures__/modules_bert.json";
import operatorsFixture from "./__fixtures__/operators_resnet50.json";
import overviewFixture from "./__fixtures__/overview_resnet50.json";
import runsFixture from "./__fixtures__/runs.json";
import { App } from "./App";
import { mergeHash } from "./state/hashState";
import { json, resetPage, stubFetch } from "./testing/fetch";

vi.mock("./components/EChart", () => ({
  EChart: (props: { testId?: string }) => <div data-testid={props.testId ?? "echart"} />,
}));

/** The runs document with the server's has_modules flag on every span. */
function runsWith(hasModules: boolean): unknown {
  return {
    ...runsFixture,
    runs: runsFixture.runs.map((r) => ({
      ...r,
      workers: r.workers.map((w) => ({ ...w, spans: w.spans.map((sp) => ({ ...sp, has_memory: false, has_modules: hasModules })) })),
    })),
  };
}

function serve(withModules: boolean): string[] {
  return stubFetch((url) => {
    if (url === "runs") return json(runsWith(withModules));
    if (url.startsWith("overview?")) return json(overviewFixture);
    if (url.startsWith("operators?")) return json(operatorsFixture);
    if (url.startsWith("kernels?")) return json(kernelsFixture);
    if (url.startsWith("modules?")) return json(withModules ? modulesFixture : { state: "ready", modules: null });
    return json({ error: "not found" }, 404);
  });
}

const SEL_HASH = "run=resnet50_num_workers_0&worker=worker0&span=1";

beforeEach(async () => {
  await resetPage();
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("view tabs", () => {
  it("opens the view the hash names and keeps it in the hash with the selection", async () => {
    window.location.hash = `#${SEL_HASH}&view=operator`;
    const requests = serve(false);
    render(<App />);
    const table = await screen.findByTestId("operator-table");
    expect(within(table).getAllByTestId("table-row")[0]?.textContent).toContain("aten::cudnn_convolution_backward_weight");
    expect(screen.getByTestId("tab-operator").getAttribute("aria-selected")).toBe("true");
    expect(requests.some((r) => r.startsWith("operators?run=resnet50_num_workers_0&worker=worker0&span=1&"))).toBe(true);
    // no module information (the server's has_modules): no Module tab, and no request to find out
    expect(screen.queryByTestId("tab-module")).toBeNull();
    expect(requests.some((r) => r.startsWith("modules?") || r.startsWith("memory?"))).toBe(false);
    expect(window.location.hash).toBe(`#${SEL_HASH}&view=operator`);

    fireEvent.click(screen.getByTestId("tab-kernel"));
    await screen.findByTestId("kernel-table");
    expect(window.location.hash).toBe(`#${SEL_HASH}&view=kernel`);
    fireEvent.click(screen.getByTestId("tab-overview"));
    await screen.findByTestId("gpu-utilization");
    expect(window.location.hash).toBe(`#${SEL_HASH}`);
  });

  it("shows the Module tab for a trace with modules; tree table and flame show the same nodes", async () => {
    serve(true);
    render(<App />);
    const tab = await screen.findByTestId("tab-module");
    fireEvent.click(tab);
    const rows = await screen.findAllByTestId("module-row");
    const roots = modulesFixture.modules;
    expect(rows[0]?.textContent).toContain(roots[0]?.name);
    expect(rows[0]?.textContent).toContain("4.22 ms");
    const block = screen.getAllByTestId("flame-block").find((b) => b.getAttribute("data-id") === "0");
    expect(block?.textContent).toBe(roots[0]?.name);
    expect(block?.style.width).toBe("100%");
    // clicking a flame block focuses it and reveals it in the table
    const child = screen.getAllByTestId("flame-block").find((b) => b.getAttribute("data-id") === "0/0") as HTMLElement;
    fireEvent.click(child);
    const focused = screen.getAllByTestId("module-row").find((r) => r.getAttribute("data-id") === "0/0");
    expect(focused?.className).toBe("focused");
    expect(window.location.hash).toBe(`#${SEL_HASH}&view=module`);
  });
});

describe("hash merge", () => {
  it("writing the selection keeps other keys such as view", () => {
    expect(mergeHash({ run: "a", worker: "b", span: "1" }, "#run=x&view=kernel")).toBe("#run=a&worker=b&span=1&view=kernel");
    expect(mergeHash({ run: "a" }, "")).toBe("#run=a");
    expect(mergeHash({}, "#view=module")).toBe("#view=module");
  });
});
