// OOM forensics of an allocator snapshot (route snapshot_oom): what was asked for, what was free on
// which stream, how fragmented it was, what held the memory and what grew just before.
import { snapshotOomUrl, type ArtifactRef } from "../../api/routes";
import type { OomGrowthRow, OomLiveRow, OomStreamRow, SnapshotOomReady } from "../../api/types";
import { Card } from "../../components/Card";
import { Notice } from "../../components/Notice";
import { PagedTable, type Column, wholePage } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { useExpanded } from "../../hooks/useServerTable";
import { formatBytes, formatNumber, formatPct } from "../../util/format";
import { formatSnapshotTime } from "../memory/options";
import { StackFrames } from "./StackFrames";

const FRAG_TIP = "(1 − largest free block / total free) × 100: the share of the free memory no single allocation can use.";

const STREAM_COLUMNS: Column<OomStreamRow>[] = [
  { key: "stream", label: "Stream", render: (r) => `${r.stream ?? "–"}${r.is_oom_stream ? " (OOM)" : ""}` },
  { key: "reserved_bytes", label: "Reserved", numeric: true, render: (r) => formatBytes(r.reserved_bytes) },
  { key: "allocated_bytes", label: "Allocated", numeric: true, render: (r) => formatBytes(r.allocated_bytes) },
  { key: "free_bytes", label: "Free (cached)", numeric: true, render: (r) => formatBytes(r.free_bytes) },
  { key: "largest_free_block_bytes", label: "Largest free block", numeric: true, render: (r) => formatBytes(r.largest_free_block_bytes) },
  { key: "fragmentation_pct", label: "Fragmentation", tooltip: FRAG_TIP, numeric: true, render: (r) => formatPct(r.fragmentation_pct, 1) },
];

export function OomCard({ artifact, timeUnit }: { artifact: ArtifactRef; timeUnit: "us" | "entry" }) {
  const state = useRemote<SnapshotOomReady>(snapshotOomUrl(artifact));
  const live = useExpanded();
  const grown = useExpanded();
  if (state.kind !== "ready") return <RemoteStatus state={state} what="OOM forensics" />;
  const d = state.data;
  if (!d.detected_by) return null;
  const liveColumns: Column<OomLiveRow>[] = [
    { key: "bytes", label: "Size", numeric: true, render: (r) => formatBytes(r.bytes) },
    { key: "time", label: "Allocated", numeric: true, render: (r) => (r.before_history ? "before the history" : r.time === null ? "–" : formatSnapshotTime(r.time, timeUnit)) },
    { key: "frame", label: "Top frame", className: "name", render: (r) => <span className="cell-name">{r.frame || "–"}</span> },
  ];
  const growthColumns: Column<OomGrowthRow>[] = [
    { key: "frame", label: "Allocation site", className: "name", render: (r) => <span className="cell-name">{r.frame || "(no frames)"}</span> },
    { key: "net_bytes", label: "Net growth", numeric: true, render: (r) => formatBytes(r.net_bytes) },
    { key: "allocated_bytes", label: "Allocated", numeric: true, render: (r) => formatBytes(r.allocated_bytes) },
    { key: "freed_bytes", label: "Freed", numeric: true, render: (r) => formatBytes(r.freed_bytes) },
    { key: "allocs", label: "Allocs", numeric: true, render: (r) => formatNumber(r.allocs) },
    { key: "frees", label: "Frees", numeric: true, render: (r) => formatNumber(r.frees) },
  ];
  const oomStream = d.streams.find((s) => s.is_oom_stream);
  return (
    <Card title={`Out of memory on ${d.device ?? "the device"}`} testId="snapshot-oom" className="mem-oom">
      {d.oom ? (
        <dl className="mem-summary" data-testid="oom-summary">
          <div>
            <dt>Requested</dt>
            <dd data-testid="oom-requested">{formatBytes(d.oom.requested_bytes)} ({formatNumber(d.oom.requested_bytes)} B)</dd>
          </div>
          <div>
            <dt>Stream</dt>
            <dd>{d.oom.stream ?? "–"}</dd>
          </div>
          <div>
            <dt>Free on the device (CUDA)</dt>
            <dd>{formatBytes(d.oom.device_free_bytes)}</dd>
          </div>
          <div>
            <dt>Active / reserved at the OOM</dt>
            <dd>
              {formatBytes(d.oom.active_bytes_at_oom)} / {formatBytes(d.oom.reserved_bytes_at_oom)}
            </dd>
          </div>
          <div>
            <dt>Largest free block on its stream</dt>
            <dd data-testid="oom-largest-free">{formatBytes(oomStream?.largest_free_block_bytes)}</dd>
          </div>
          <div>
            <dt>Fragmentation (all streams)</dt>
            <dd data-testid="oom-fragmentation" title={FRAG_TIP}>{formatPct(d.totals?.fragmentation_pct, 1)}</dd>
          </div>
          <div>
            <dt>When</dt>
            <dd>{formatSnapshotTime(d.oom.time, timeUnit)}{d.ooms.length > 1 ? ` (the last of ${d.ooms.length} OOMs)` : ""}</dd>
          </div>
        </dl>
      ) : (
        <Notice>This file's name says it was dumped on an OOM; its history has no OOM entry, so the requested size is unknown. The state below is the dump's.</Notice>
      )}
      {d.state_at === "reconstructed" ? (
        <Notice>
          <span data-testid="oom-reconstructed">
            {formatNumber(d.entries_after_oom)} allocator events followed the OOM before the dump: the state below is rebuilt to the
            moment of the OOM (at the dump: {formatBytes(d.dump_totals?.free_bytes)} free, largest block{" "}
            {formatBytes(d.dump_totals?.largest_free_block_bytes)}).
          </span>
        </Notice>
      ) : null}
      <h3 className="mem-subtitle">Free and reserved memory per stream</h3>
      <PagedTable testId="oom-streams" columns={STREAM_COLUMNS} {...wholePage(d.streams)} rowKey={(r) => String(r.stream)} empty="No segments on this device." />
      <h3 className="mem-subtitle">Largest live allocations</h3>
      <PagedTable testId="oom-live" columns={liveColumns} {...wholePage(d.largest_live)} rowKey={(_, i) => String(i)} expanded={live.expanded} onToggle={live.toggle} renderExpanded={(r) => <StackFrames artifact={artifact} stack={r.stack} />} />
      {d.growth ? (
        <>
          <h3 className="mem-subtitle">
            What grew in the last {formatNumber(d.growth.entries)} entries before it: {formatBytes(d.growth.net_bytes)} net
          </h3>
          <PagedTable testId="oom-growth" columns={growthColumns} {...wholePage(d.growth.rows)} rowKey={(_, i) => String(i)} expanded={grown.expanded} onToggle={grown.toggle} renderExpanded={(r) => <StackFrames artifact={artifact} stack={r.stack} />} />
        </>
      ) : null}
    </Card>
  );
}
