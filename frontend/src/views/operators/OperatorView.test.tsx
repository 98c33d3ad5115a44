import { act, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import kernelsFixture from "../../__fixtures__/kernels_resnet50.json";
import operatorsFixture from "../../__fixtures__/operators_resnet50.json";
import stacksFixture from "../../__fixtures__/operator_stacks_conv2d.json";
import { KernelView } from "../kernels/KernelView";
import { OperatorView } from "./OperatorView";
import { json, notFound, query, stubFetch, stubFetchEachTest } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { ariaLabel: string }) => <div data-testid="echart" aria-label={props.ariaLabel} />,
}));

const SEL = { run: "resnet50", worker: "worker0", span: "1" };
const requests = stubFetchEachTest((url) => {
  if (url.startsWith("operators?")) return json(operatorsFixture);
  if (url.startsWith("operator_stacks?")) return json(stacksFixture);
  if (url.startsWith("kernels?")) return json({ ...kernelsFixture, group_by: query(url).get("group_by") });
  return notFound();
});

describe("OperatorView", () => {
  it("renders a fixture page with the server's default sort, four donuts and a CSV link", async () => {
    render(<OperatorView selection={SEL} theme="light" />);
    const table = await screen.findByTestId("operator-table");
    const rows = within(table).getAllByTestId("table-row");
    expect(rows).toHaveLength(operatorsFixture.rows.length);
    const first = rows[0] as HTMLElement;
    expect(first.querySelector('[data-col="name"]')?.textContent).toBe("aten::cudnn_convolution_backward_weight");
    expect(first.querySelector('[data-col="calls"]')?.textContent).toBe("318");
    expect(first.querySelector('[data-col="device_self_us"]')?.textContent).toBe("142.46 ms");
    expect(first.querySelector('[data-col="host_self_us"]')?.textContent).toBe("22.80 ms");
    expect(first.querySelector('[data-col="tc_eligible"]')?.textContent).toBe("Yes");
    // no FLOPs in this trace: no FLOPs columns
    expect(table.querySelector('[data-col="flops"]')).toBeNull();
    // the default sort is marked
    expect(table.querySelector("th.sorted")?.getAttribute("data-col")).toBe("device_self_us");
    expect(screen.getByTestId("row-count").textContent).toBe(`1–5 of ${operatorsFixture.total_rows} rows`);
    expect(screen.getAllByTestId("echart")).toHaveLength(4);
    // the first request asks for the server's default sort (none given), first page
    const q = query(requests[0] as string);
    expect(q.get("sort")).toBeNull();
    expect(q.get("offset")).toBe("0");
    expect(q.get("limit")).toBe("100");
    expect(q.get("group_by")).toBe("operator");
    const csv = screen.getByTestId("csv-link").getAttribute("href") as string;
    expect(csv.startsWith("operators.csv?")).toBe(true);
    expect(Object.fromEntries(query(csv))).toEqual({
      run: "resnet50",
      worker: "worker0",
      span: "1",
      group_by: "operator",
      sort: "device_self_us",
      order: "desc",
    });
  });

  it("sorts, searches, groups and pages on the server; the CSV link follows", async () => {
    render(<OperatorView selection={SEL} theme="light" />);
    await screen.findByTestId("operator-table");
    fireEvent.click(screen.getByTestId("sort-host_total_us"));
    await waitFor(() => expect(query(requests.at(-1) as string).get("sort")).toBe("host_total_us"));
    expect(query(requests.at(-1) as string).get("order")).toBe("desc");
    fireEvent.click(screen.getByTestId("sort-host_total_us"));
    await waitFor(() => expect(query(requests.at(-1) as string).get("order")).toBe("asc"));
    fireEvent.change(screen.getByTestId("op-search"), { target: { value: "conv2d" } });
    await waitFor(() => expect(query(requests.at(-1) as string).get("search")).toBe("conv2d"), { timeout: 2000 });
    fireEvent.change(screen.getByTestId("op-group-by"), { target: { value: "input_shape" } });
    await waitFor(() => expect(query(requests.at(-1) as string).get("group_by")).toBe("input_shape"));
    const csv = query(screen.getByTestId("csv-link").getAttribute("href") as string);
    expect([csv.get("group_by"), csv.get("sort"), csv.get("order"), csv.get("search"), csv.get("offset")]).toEqual([
      "input_shape",
      "host_total_us",
      "asc",
      "conv2d",
      null,
    ]);
  });

  it("go to source posts {filename, line: line - 1} to window.parent.parent and shows path:line", async () => {
    const postMessage = vi.fn();
    vi.spyOn(window, "parent", "get").mockReturnValue({ parent: { postMessage } } as unknown as Window);
    const writeText = vi.fn(() => Promise.reject(new Error("denied")));
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    render(<OperatorView selection={SEL} theme="light" />);
    const [toggle] = await screen.findAllByTestId("op-expand");
    fireEvent.click(toggle as HTMLElement);
    const stackToggles = await screen.findAllByTestId("stack-expand");
    expect(query(requests.find((r) => r.startsWith("operator_stacks?")) as string).get("key")).toBe(
      operatorsFixture.rows[0]?.key,
    );
    fireEvent.click(stackToggles[0] as HTMLElement);
    const frames = await screen.findAllByTestId("frame");
    const stack = stacksFixture.stacks[0] as { frames: { text: string; file: string; line: number }[] };
    expect(frames.map((f) => f.querySelector("code")?.textContent)).toEqual(stack.frames.map((f) => f.text));
    const gotos = within(frames[2] as HTMLElement).getAllByTestId("goto-source");
    await act(async () => {
      fireEvent.click(gotos[0] as HTMLElement);
    });
    const frame = stack.frames[2] as { file: string; line: number };
    expect(postMessage).toHaveBeenCalledTimes(1);
    expect(postMessage).toHaveBeenCalledWith({ filename: frame.file, line: frame.line - 1 }, "*");
    expect(writeText).toHaveBeenCalledWith(`${frame.file}:${frame.line}`);
    expect(screen.getByTestId("toast").textContent).toContain(`${frame.file}:${frame.line}`);
  });

  it("pages with next/prev, 100 rows a page, and shows loading and error states", async () => {
    const big = { ...operatorsFixture, total_rows: 250 };
    let calls = 0;
    stubFetch((url) => {
      calls += 1;
      if (calls === 1) return json({ state: "loading", progress: 0.5 });
      if (query(url).get("offset") === "200") return json({ error: "boom" }, 500);
      return json({ ...big, offset: Number(query(url).get("offset")) });
    }, requests);
    render(<OperatorView selection={SEL} theme="light" />);
    expect((await screen.findByText(/Parsing the trace: 50 %/)).textContent).toBeTruthy();
    await screen.findByTestId("operator-table", {}, { timeout: 4000 });
    expect(screen.getByTestId("row-count").textContent).toBe("1–5 of 250 rows");
    const [prev, next] = within(screen.getByTestId("pager")).getAllByRole("button") as [HTMLButtonElement, HTMLButtonElement];
    expect(prev.disabled).toBe(true);
    fireEvent.click(next);
    await waitFor(() => expect(query(requests.at(-1) as string).get("offset")).toBe("100"));
    await waitFor(() => expect(screen.getByTestId("row-count").textContent).toBe("101–105 of 250 rows"));
    fireEvent.click(next);
    const card = await screen.findByTestId("error-card");
    expect(card.textContent).toContain("HTTP 500: boom");
    // the last good page stays, so the user can step back
    expect(screen.getByTestId("row-count").textContent).toBe("101–105 of 250 rows");
    fireEvent.click(within(screen.getByTestId("pager")).getAllByRole("button")[0] as HTMLElement);
    await waitFor(() => expect(screen.queryByTestId("error-card")).toBeNull());
    expect(screen.getByTestId("row-count").textContent).toBe("1–5 of 250 rows");
  });

  it("renders server strings as text", async () => {
    const evil = { ...operatorsFixture, rows: [{ ...operatorsFixture.rows[0], name: "<img src=x onerror=alert(1)>" }] };
    vi.stubGlobal("fetch", async () => json(evil));
    render(<OperatorView selection={SEL} theme="light" />);
    const table = await screen.findByTestId("operator-table");
    expect(table.querySelector("img")).toBeNull();
    expect(table.textContent).toContain("<img src=x onerror=alert(1)>");
  });
});

describe("KernelView", () => {
  it("renders kernels with nulls as dashes and searches by kernel and operator", async () => {
    render(<KernelView selection={SEL} theme="light" />);
    const table = await screen.findByTestId("kernel-table");
    const rows = within(table).getAllByTestId("table-row");
    expect(rows[0]?.querySelector('[data-col="name"]')?.textContent).toContain("dgrad_engine");
    expect(rows[0]?.querySelector('[data-col="total_us"]')?.textContent).toBe("80.76 ms");
    expect(table.querySelector("th.sorted")?.getAttribute("data-col")).toBe("total_us");
    expect(screen.getAllByTestId("echart")).toHaveLength(2);
    fireEvent.change(screen.getByTestId("kernel-op-search"), { target: { value: "conv" } });
    fireEvent.change(screen.getByTestId("kernel-search"), { target: { value: "dgrad" } });
    await waitFor(() => {
      const q = query(requests.at(-1) as string);
      expect([q.get("op_search"), q.get("search")]).toEqual(["conv", "dgrad"]);
    });
    fireEvent.change(screen.getByTestId("kernel-group-by"), { target: { value: "kernel_op_config" } });
    await waitFor(() => expect(table.querySelector('[data-col="grid"]')).not.toBeNull());
    // this fixture's rows have no op/grid (grouped by kernel): dashes
    expect(within(table).getAllByTestId("table-row")[0]?.querySelector('td[data-col="grid"]')?.textContent).toBe("–");
    const csv = screen.getByTestId("csv-link").getAttribute("href") as string;
    expect(csv.startsWith("kernels.csv?")).toBe(true);
    expect(query(csv).get("op_search")).toBe("conv");
  });
});
