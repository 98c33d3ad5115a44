// A table with no rows and no filter says the trace has none, not "No rows match."
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import kernelsFixture from "../../__fixtures__/kernels_resnet50.json";
import type { Selection } from "../../api/types";
import { KernelView } from "../kernels/KernelView";
import { json, stubFetch } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({ EChart: (props: { testId?: string }) => <div data-testid={props.testId} /> }));

const SEL: Selection = { run: "cpu_only", worker: "w0", span: "1" };

afterEach(() => vi.unstubAllGlobals());

describe("empty tables", () => {
  it("GPU Kernel table of a trace without kernels, then with a filter that matches nothing", async () => {
    stubFetch(() => json({ ...kernelsFixture, total_rows: 0, rows: [], top: [] }));
    render(<KernelView selection={SEL} theme="light" />);
    const table = await screen.findByTestId("kernel-table");
    expect(table.querySelector("td.empty")?.textContent).toBe("This trace has no GPU kernels.");
    fireEvent.change(screen.getByTestId("kernel-search").querySelector("input") ?? screen.getByTestId("kernel-search"), {
      target: { value: "gemm" },
    });
    await waitFor(() =>
      expect(screen.getByTestId("kernel-table").querySelector("td.empty")?.textContent).toBe("No GPU kernels match the filter."),
    );
  });
});
