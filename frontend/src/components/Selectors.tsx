import type { RunInfo, Selection, SpanInfo } from "../api/types";
import type { PartialSelection } from "../state/hashState";
import { findRun, findWorker } from "../state/selection";
import { SelectField } from "./Fields";

interface SelectorsProps {
  runs: RunInfo[];
  selection: Selection;
  onSelect: (next: PartialSelection) => void;
}

export function runLabel(name: string): string {
  return name === "." ? ". (logdir root)" : name;
}

/**
 * The Run select's options: runs with trace files first, then runs of memory files only (allocator
 * snapshots, MemProfiler), marked as such; each group keeps the server's order.
 */
export function runOptions(runs: RunInfo[]): { value: string; label: string; title?: string }[] {
  const traced = runs.filter((r) => r.workers.length > 0);
  const memoryOnly = runs.filter((r) => r.workers.length === 0);
  return [
    ...traced.map((r) => ({ value: r.name, label: runLabel(r.name) })),
    ...memoryOnly.map((r) => ({
      value: r.name,
      label: `${runLabel(r.name)} (memory files only)`,
      title: "No trace files in this run: allocator snapshots or MemProfiler files only",
    })),
  ];
}

export function spanLabel(span: SpanInfo): string {
  switch (span.state) {
    case "ready":
      return span.span;
    case "loading":
      return `${span.span} (loading ${Math.round(span.progress * 100)} %)`;
    case "queued":
      return `${span.span} (queued)`;
    case "error":
      return `${span.span} (error)`;
  }
}

export interface PickerTestIds {
  run: string;
  worker: string;
  span: string;
}

/**
 * The Run, Worker and Span selects of one selection. What a change selects besides the picked value
 * (e.g. the first worker of a new run) is the caller's choice.
 */
export function RunWorkerSpanFields({
  runs,
  value,
  testIds,
  onRun,
  onWorker,
  onSpan,
}: {
  runs: RunInfo[];
  value: Selection;
  testIds: PickerTestIds;
  onRun: (run: string) => void;
  onWorker: (worker: string) => void;
  onSpan: (span: string) => void;
}) {
  const run = findRun(runs, value.run);
  const worker = findWorker(run, value.worker);
  // A run of memory artifacts only (allocator snapshots, MemProfiler files) has no workers or spans.
  const noTraces = {
    label: "\u2014 no traces",
    title: `Run ${runLabel(value.run)} has no trace files, only memory artifacts: see its Snapshots view`,
  };
  return (
    <>
      <SelectField
        label="Run"
        testId={testIds.run}
        value={value.run}
        options={runOptions(runs)}
        onChange={onRun}
      />
      <SelectField
        label="Worker"
        testId={testIds.worker}
        value={value.worker}
        options={(run?.workers ?? []).map((w) => ({ value: w.worker, label: w.worker }))}
        onChange={onWorker}
        empty={noTraces}
      />
      <SelectField
        label="Span"
        testId={testIds.span}
        value={value.span}
        options={(worker?.spans ?? []).map((s) => ({ value: s.span, label: spanLabel(s), title: s.path }))}
        onChange={onSpan}
        empty={{ label: "\u2014", title: noTraces.title }}
      />
    </>
  );
}

const MAIN_TEST_IDS: PickerTestIds = { run: "run-select", worker: "worker-select", span: "span-select" };

/** Run, Worker and Span pickers. Changing an outer one resets the inner ones to their first entry. */
export function Selectors({ runs, selection, onSelect }: SelectorsProps) {
  return (
    <div className="selectors">
      <RunWorkerSpanFields
        runs={runs}
        value={selection}
        testIds={MAIN_TEST_IDS}
        onRun={(run) => onSelect({ run })}
        onWorker={(worker) => onSelect({ run: selection.run, worker })}
        onSpan={(span) => onSelect({ ...selection, span })}
      />
    </div>
  );
}
