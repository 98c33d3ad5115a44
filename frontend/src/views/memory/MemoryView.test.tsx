import { act, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import memoryFixture from "../../__fixtures__/memory/memory.json";
import eventsFixture from "../../__fixtures__/memory/memory_events.json";
import statsFixture from "../../__fixtures__/memory/memory_stats.json";
import { RECONSTRUCTED_NOTICE } from "./definitions";
import { TEST_HOOKS_KEY } from "../../util/testHooks";
import { MemoryView } from "./MemoryView";
import { json, query, stubFetch } from "../../testing/fetch";

vi.mock("./MemChart", () => ({
  MemChart: (props: { ariaLabel: string; testId?: string }) => <div data-testid={props.testId ?? "memchart"} aria-label={props.ariaLabel} />,
}));

const SEL = { run: "bert", worker: "w", span: "1" };
let requests: string[] = [];
let memory: unknown = memoryFixture;
let events: unknown = eventsFixture;

beforeEach(() => {
  window.localStorage.setItem(TEST_HOOKS_KEY, "1");
  memory = memoryFixture;
  events = eventsFixture;
  requests = stubFetch((url) => {
    if (url.startsWith("memory?")) return json(memory);
    if (url.startsWith("memory_events?")) return json(events);
    if (url.startsWith("memory_stats?")) return json(statsFixture);
    return new Response("{}", { status: 404 });
  });
});

afterEach(() => {
  window.localStorage.removeItem(TEST_HOOKS_KEY);
  vi.unstubAllGlobals();
});

describe("MemoryView", () => {
  it("shows GPU0 by default with its peak, the events and the statistics of the real trace", async () => {
    render(<MemoryView selection={SEL} theme="light" />);
    const table = await screen.findByTestId("memory-events-table");
    expect((screen.getByTestId("memory-device-select") as HTMLSelectElement).value).toBe("GPU0");
    expect(screen.getByTestId("memory-peak-allocated").textContent).toBe("96.6 MiB");
    expect(screen.getByTestId("memory-curve")).toBeTruthy();
    const rows = within(table).getAllByTestId("memory-event-row");
    expect(rows).toHaveLength(eventsFixture.rows.length);
    expect(rows[0]!.querySelector('[data-col="op"]')?.textContent).toBe("aten::addmm");
    expect(rows[0]!.querySelector('[data-col="size_bytes"]')?.textContent).toBe("8.2 MiB");
    expect(rows[0]!.querySelector('[data-col="addr"]')?.textContent).toBe("0x74953a000000");
    const stats = await screen.findByTestId("memory-stats-table");
    expect(within(stats).getAllByTestId("memory-stat-row")).toHaveLength(statsFixture.rows.length);
    expect(stats.querySelector("th.sorted")?.getAttribute("data-col")).toBe("allocation_bytes");
    // size increase counts frees during the operator: addmm frees more than it allocates itself
    const addmm = within(stats).getAllByTestId("memory-stat-row").find((r) => r.textContent?.includes("aten::addmm"))!;
    expect(addmm.querySelector('[data-col="self_size_increase_bytes"]')?.textContent).toBe("-12.7 MiB");
    expect(addmm.querySelector('[data-col="self_not_freed_bytes"]')?.textContent).toBe("0 B");
    expect(screen.queryByTestId("memory-reconstructed")).toBeNull();
    const ev = requests.find((u) => u.startsWith("memory_events?"))!;
    expect(query(ev).get("device")).toBe("GPU0");
    expect(query(ev).get("start_us")).toBeNull();
  });

  it("a selected range refetches the curve at that window and both tables with start_us/end_us; reset drops it", async () => {
    render(<MemoryView selection={SEL} theme="light" />);
    await screen.findByTestId("memory-events-table");
    await act(async () => {
      window.__kinetoscopeMemory!.selectRange(3000, 2000.5);
    });
    await waitFor(() => {
      const ranged = requests.filter((u) => query(u).get("start_us") === "2000.5" && query(u).get("end_us") === "3000");
      expect(ranged.some((u) => u.startsWith("memory?") && query(u).get("width_px") === "1600")).toBe(true);
      expect(ranged.some((u) => u.startsWith("memory_events?"))).toBe(true);
      expect(ranged.some((u) => u.startsWith("memory_stats?"))).toBe(true);
    });
    expect(window.__kinetoscopeMemory!.range()).toEqual({ start_us: 2000.5, end_us: 3000 });
    const csv = screen.getByTestId("memory-events-csv").getAttribute("href")!;
    expect(csv.startsWith("memory_events.csv?")).toBe(true);
    expect(query(csv).get("start_us")).toBe("2000.5");
    expect(query(csv).get("limit")).toBeNull();
    expect(screen.getByTestId("memory-range").textContent).toBe("Range 2.00 ms – 3.00 ms");
    const before = requests.length;
    fireEvent.click(screen.getByTestId("memory-reset-range"));
    await waitFor(() => expect(requests.slice(before).some((u) => u.startsWith("memory_events?") && !query(u).has("start_us"))).toBe(true));
  });

  it("with a range, the header shows the server's peaks inside the range, not the whole trace's", async () => {
    const fixture = memoryFixture as { devices: Record<string, unknown>[] };
    const ranged = {
      ...fixture,
      devices: fixture.devices.map((d) => ({ ...d, range_peak_allocated_bytes: 1048576, range_peak_allocated_ts: 2500,
                                              range_peak_reserved_bytes: 2097152 })),
    };
    stubFetch((url) => {
      if (url.startsWith("memory?")) return json(query(url).has("start_us") ? ranged : memory);
      if (url.startsWith("memory_events?")) return json(events);
      if (url.startsWith("memory_stats?")) return json(statsFixture);
      return new Response("{}", { status: 404 });
    }, requests);
    render(<MemoryView selection={SEL} theme="light" />);
    await screen.findByTestId("memory-events-table");
    expect(screen.getByTestId("memory-peak-allocated").textContent).toBe("96.6 MiB");
    await act(async () => {
      window.__kinetoscopeMemory!.selectRange(2000, 3000);
    });
    await waitFor(() => expect(screen.getByTestId("memory-peak-allocated").textContent).toBe("1.0 MiB"));
    expect(screen.getByTestId("memory-peak-reserved").textContent).toBe("2.0 MiB");
    expect(screen.getByText("Peak allocated in range")).toBeTruthy();
  });

  it("size filters with units go to the server in bytes; an invalid size is marked and not sent", async () => {
    render(<MemoryView selection={SEL} theme="light" />);
    await screen.findByTestId("memory-events-table");
    fireEvent.change(screen.getByTestId("memory-min-size"), { target: { value: "1 MiB" } });
    fireEvent.change(screen.getByTestId("memory-max-size"), { target: { value: "lots" } });
    await waitFor(() => expect(requests.some((u) => query(u).get("min_bytes") === "1048576")).toBe(true), { timeout: 3000 });
    expect(requests.some((u) => query(u).has("max_bytes"))).toBe(false);
    expect(screen.getByTestId("memory-max-size").className).toContain("mem-input-invalid");
  });

  it("selecting a row marks it (its lifetime is shaded on the curve)", async () => {
    render(<MemoryView selection={SEL} theme="light" />);
    const rows = await screen.findAllByTestId("memory-event-row");
    fireEvent.click(rows[1]!);
    expect(rows[1]!.getAttribute("aria-selected")).toBe("true");
    fireEvent.click(rows[1]!);
    expect(rows[1]!.getAttribute("aria-selected")).toBe("false");
  });

  it("says when the curve is reconstructed, and shows the reason instead of an empty events table", async () => {
    const devices = memoryFixture.devices.map((d) => ({ ...d, reconstructed: true, reserved: null }));
    memory = { ...memoryFixture, devices, pairs_reason: "this trace has no Addr: allocations cannot be paired with frees" };
    render(<MemoryView selection={SEL} theme="light" />);
    expect((await screen.findByTestId("memory-reconstructed")).textContent).toBe(RECONSTRUCTED_NOTICE);
    expect(screen.getByTestId("memory-events-reason").textContent).toContain("no Addr");
    expect(screen.queryByTestId("memory-events-table")).toBeNull();
    expect(requests.some((u) => u.startsWith("memory_events?"))).toBe(false);
    // the statistics do not need pairs
    expect(await screen.findByTestId("memory-stats-table")).toBeTruthy();
  });

  it("a trace without memory events says so", async () => {
    memory = { state: "ready", pairs_reason: null, devices: [] };
    render(<MemoryView selection={SEL} theme="light" />);
    expect(await screen.findByText(/no memory events/)).toBeTruthy();
  });
});
