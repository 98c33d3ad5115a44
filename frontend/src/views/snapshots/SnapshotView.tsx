// A run's artifacts: allocator snapshots (summary, active-memory timeline, allocator state, top
// allocations), memory-timeline exports and finetuning-scheduler MemProfiler files. For runs without trace files this is the main content.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { deviceIndex, snapshotTimelineUrl, snapshotUrl, type ArtifactRef } from "../../api/routes";
import type { ArtifactInfo, SnapshotReady, SnapshotTimelineReady } from "../../api/types";
import { Card } from "../../components/Card";
import { SelectField } from "../../components/Fields";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { ErrorCard } from "../../components/ErrorCard";
import { Notice } from "../../components/Notice";
import { RemoteStatus } from "../../components/RemoteStatus";
import { chartTextColor } from "../../components/chartColors";
import { remoteData, useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { formatBytes, formatNumber } from "../../util/format";
import type { MemChartInstance } from "../memory/echarts";
import { MemChart } from "../memory/MemChart";
import { bandsCaption, formatSnapshotTime, snapshotTimelineOption } from "../memory/options";
import { StackFrames } from "./StackFrames";
import { useMemoryStyles } from "../memory/useMemoryStyles";
import { MemoryHtmlView } from "./MemoryHtmlView";
import { MemoryTimelineExportView } from "./MemoryTimelineExportView";
import { OomCard } from "./OomCard";
import { RankPeaks } from "./RankPeaks";
import { AlivePeak } from "./AlivePeak";
import { MemProfilerLogView, MemProfilerStatsView } from "./MemProfilerView";
import { SegmentsCard, TopAllocations } from "./SnapshotTables";
import { deviceLabel } from "../../util/device";

const KIND_LABEL: Record<string, string> = {
  snapshot: "snapshot",
  memory_timeline: "memory timeline",
  memprofiler_stats: "MemProfiler stats",
  memprofiler_log: "FSDP memory report",
  memory_html: "memory timeline image",
};

/** ", rank 0, batch 3, trace rank0/2" for the selector; empty when the listing names none. */
function origin(a: ArtifactInfo): string {
  const parts = [];
  if (a.rank !== null && a.rank !== undefined) parts.push(`rank ${a.rank}`);
  if (a.batch !== null && a.batch !== undefined) parts.push(`batch ${a.batch}`);
  if (a.trace) parts.push(`trace ${a.trace.worker}/${a.trace.span}`);
  return parts.length ? `, ${parts.join(", ")}` : "";
}

/** The picker's whole text of one artifact: path (kind, size, origin[, error]). */
function artifactLabel(a: ArtifactInfo): string {
  return `${a.path} (${KIND_LABEL[a.kind] ?? a.kind}, ${formatBytes(a.size_bytes)}${origin(a)}${a.state === "error" ? ", error" : ""})`;
}

const TIMELINE_WIDTH_PX = 1200;

interface SnapshotViewProps {
  run: string;
  artifacts: ArtifactInfo[];
  theme: Theme;
  /** Open the trace a memory export was written beside (its worker and span). */
  onOpenTrace?: (worker: string, span: string) => void;
}

/** The artifact selector and the selected artifact. */
export function SnapshotView({ run, artifacts, theme, onOpenTrace }: SnapshotViewProps) {
  useMemoryStyles();
  const [path, setPath] = useState<string | null>(null);
  const current =
    artifacts.find((a) => a.path === path) ??
    artifacts.find((a) => a.kind === "memprofiler_stats" && a.state !== "error") ??
    artifacts.find((a) => a.state !== "error") ??
    artifacts[0];
  if (!current) return <Notice>This run has no memory snapshots or memory-timeline exports.</Notice>;
  const ref: ArtifactRef = { run, path: current.path };
  return (
    <div className="mem-view" data-testid="snapshot-view">
      <div className="mem-controls">
        <label className="selector">
          <span className="selector-label">Memory artifact</span>
          <select
            data-testid="artifact-select"
            className="select-wide"
            value={current.path}
            title={artifactLabel(current)}
            onChange={(e) => setPath(e.target.value)}
          >
            {artifacts.map((a) => (
              <option key={a.path} value={a.path}>
                {artifactLabel(a)}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBoundary key={current.path} title="The memory artifact failed to render">
        {current.kind === "snapshot" ? (
          <SnapshotDetail artifact={ref} theme={theme} info={current} onSelect={setPath} />
        ) : current.kind === "memory_html" ? (
          <MemoryHtmlView artifact={ref} info={current} onOpenTrace={onOpenTrace} />
        ) : current.kind === "memprofiler_stats" ? (
          <MemProfilerStatsView artifact={ref} theme={theme} />
        ) : current.kind === "memprofiler_log" ? (
          <MemProfilerLogView artifact={ref} />
        ) : (
          <MemoryTimelineExportView artifact={ref} theme={theme} trace={current.trace} onOpenTrace={onOpenTrace} />
        )}
      </ErrorBoundary>
    </div>
  );
}

interface SnapshotDetailProps {
  artifact: ArtifactRef;
  theme: Theme;
  info: ArtifactInfo;
  onSelect: (path: string) => void;
}

function SnapshotDetail({ artifact, theme, info, onSelect }: SnapshotDetailProps) {
  const state = useRemote<SnapshotReady>(snapshotUrl(artifact));
  const [deviceName, setDeviceName] = useState<string | null>(null);
  if (state.kind === "file-error") {
    return <ErrorCard title={`This snapshot could not be read: ${artifact.path}`} message={state.error} />;
  }
  if (state.kind !== "ready") {
    return state.kind === "not-ready" || state.kind === "idle" || state.kind === "fetching" ? (
      <Notice>Reading the snapshot {artifact.path}…</Notice>
    ) : (
      <RemoteStatus state={state} what="snapshot" />
    );
  }
  const snap = state.data;
  const devNames = snap.devices.map((d) => d.device);
  const dev = snap.devices.find((d) => d.device === deviceName) ?? snap.devices[0];
  const index = dev ? deviceIndex(dev.device) : (snap.segment_devices[0] ?? 0);
  const markers = dev ? (snap.markers[dev.device] ?? []) : [];
  const hasOom = Object.values(snap.markers).some((m) => m.some((x) => x.action === "oom")) || info.taken_on_oom === true;
  return (
    <>
      {hasOom ? <OomCard artifact={artifact} timeUnit={snap.time_unit} /> : null}
      {info.rank !== null && info.rank !== undefined ? <RankPeaks artifact={artifact} onSelect={onSelect} /> : null}
      <Card title="Snapshot">
        <dl className="mem-summary" data-testid="snapshot-summary">
          <div>
            <dt>Layout</dt>
            <dd>{snap.layout}</dd>
          </div>
          <div>
            <dt>Time unit</dt>
            <dd>{snap.time_unit === "us" ? "µs since the first entry" : "entry index (untimed)"}</dd>
          </div>
          {snap.devices.map((d) => (
            <div key={d.device}>
              <dt>Peak active bytes, {deviceLabel(d.device)}</dt>
              <dd data-testid={`snapshot-peak-${d.device}`} title={`${d.peak_active_bytes} bytes`}>
                {formatBytes(d.peak_active_bytes)} ({formatNumber(d.peak_active_bytes)} B)
                {d.peak_time !== null ? ` at ${formatSnapshotTime(d.peak_time, snap.time_unit)}` : ""}
              </dd>
            </div>
          ))}
          <div>
            <dt>OOM / snapshot markers</dt>
            <dd>{formatNumber(Object.values(snap.markers).reduce((a, m) => a + m.length, 0))}</dd>
          </div>
        </dl>
        {!snap.history_recorded ? (
          <Notice kind="warning">
            <span data-testid="snapshot-no-history">
              History not recorded: this snapshot has only the allocator state at dump time (record with
              torch.cuda.memory._record_memory_history() to get the timeline).
            </span>
          </Notice>
        ) : null}
        {devNames.length > 1 ? (
          <SelectField
            label="Device"
            testId="snapshot-device-select"
            value={dev?.device ?? ""}
            options={devNames.map((d) => ({ value: d, label: deviceLabel(d) }))}
            onChange={setDeviceName}
          />
        ) : null}
      </Card>
      {snap.history_recorded && dev ? (
        <SnapshotTimeline key={`${artifact.path}:${index}`} artifact={artifact} device={index} theme={theme} markerCount={markers.length} />
      ) : null}
      {snap.history_recorded && dev ? <AlivePeak key={`alive:${artifact.path}:${index}`} artifact={artifact} device={index} /> : null}
      {snap.annotations.length > 0 ? (
        <Card title={`Annotations (${formatNumber(snap.annotations.length)})`}>
          <ul className="mem-annotations" data-testid="snapshot-annotations">
            {snap.annotations.slice(0, 500).map((a, i) => (
              <li key={i}>
                {[a.stage, a.name].filter(Boolean).join(" ")}
                {typeof a.time_us === "number" ? ` @ ${formatNumber(a.time_us)} µs` : ""}
                {typeof a.device === "number" ? ` (GPU ${a.device})` : ""}
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
      {snap.segment_devices.length > 0 ? (
        <SegmentsCard artifact={artifact} device={snap.segment_devices.includes(index) ? index : snap.segment_devices[0]!} />
      ) : null}
      {snap.history_recorded && dev ? <TopAllocations artifact={artifact} device={index} timeUnit={snap.time_unit} /> : null}
    </>
  );
}

function SnapshotTimeline({ artifact, device, theme, markerCount }: { artifact: ArtifactRef; device: number; theme: Theme; markerCount: number }) {
  const [window, setWindow] = useState<{ start: number; end: number } | null>(null);
  const state = useRemote<SnapshotTimelineReady>(snapshotTimelineUrl(artifact, device, window, TIMELINE_WIDTH_PX));
  const tl = remoteData(state);
  const [full, setFull] = useState<{ start: number; end: number } | null>(null);
  useEffect(() => {
    if (tl && window === null) setFull({ start: tl.start, end: tl.end });
  }, [tl, window]);
  const [selected, setSelected] = useState<number | null>(null);
  const textColor = chartTextColor(theme);
  const built = useMemo(
    () => (tl ? snapshotTimelineOption(tl, textColor, full ?? { start: tl.start, end: tl.end }, selected) : null),
    [tl, textColor, full, selected],
  );
  const placedRef = useRef(built?.placed ?? []);
  placedRef.current = built?.placed ?? [];
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  const onReady = useCallback(
    (chart: MemChartInstance | null) => {
      if (!chart) return;
      chart.off("click");
      chart.on("click", (p: unknown) => {
        const params = p as { seriesType?: string; dataIndex?: number };
        if (params.seriesType !== "custom" || params.dataIndex === undefined) return;
        const placed = placedRef.current[params.dataIndex];
        if (placed) setSelected((prev) => (prev === placed.index ? null : placed.index));
      });
      chart.off("datazoom");
      chart.on("datazoom", () => {
        clearTimeout(timer.current);
        timer.current = setTimeout(() => {
          const dz = (chart.getOption() as { dataZoom?: { startValue?: number; endValue?: number }[] }).dataZoom?.[0];
          if (!dz || dz.startValue === undefined || dz.endValue === undefined) return;
          setWindow({ start: dz.startValue, end: dz.endValue });
        }, 300);
      });
    },
    [],
  );

  const band = tl && selected !== null ? tl.bands[selected] : undefined;
  return (
    <Card title="Active memory timeline">
      <div className="mem-controls">
        <span className="mem-range" data-testid="snapshot-window">
          {tl ? `${formatSnapshotTime(tl.start, tl.time_unit)} – ${formatSnapshotTime(tl.end, tl.time_unit)}` : ""}
          {tl ? `; ${bandsCaption(tl)}` : ""}
          {markerCount ? `; ${markerCount} OOM/snapshot markers` : ""}
        </span>
        <button type="button" data-testid="snapshot-reset-zoom" disabled={window === null} onClick={() => setWindow(null)}>
          Reset zoom
        </button>
      </div>
      <RemoteStatus state={state} what="snapshot timeline" />
      {built ? (
        <div data-testid="snapshot-timeline" data-bands={built.placed.length}>
          <MemChart option={built.option} theme={theme} height={360} ariaLabel="Active memory timeline" onReady={onReady} />
        </div>
      ) : null}
      <p className="mem-hint">Bands: the largest allocations alive in the window, stacked in allocation order, on the blocks allocated before the history began (grey). Reserved counts the segments that existed before the history. Click a band for its stack; scroll or use the slider to zoom.</p>
      {band ? (
        <div className="mem-detail" data-testid="snapshot-band-detail">
          <b>{formatBytes(band.bytes)}</b> ({formatNumber(band.bytes)} B),{" "}
          {band.before_history
            ? `allocated before the history began${(band.blocks ?? 1) > 1 ? ` (${formatNumber(band.blocks!)} blocks)` : ""}`
            : `allocated ${formatSnapshotTime(band.alloc_time, tl!.time_unit)}`}
          {band.free_time === null ? ", not freed" : `, freed ${formatSnapshotTime(band.free_time, tl!.time_unit)}`}
          <StackFrames artifact={artifact} stack={band.stack} />
        </div>
      ) : null}
    </Card>
  );
}
