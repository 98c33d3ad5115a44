import type { Selection, SpanInfo } from "../api/types";
import type { ViewId } from "../hooks/useView";
import { KernelView } from "./kernels/KernelView";
import { MemoryView } from "./memory/MemoryView";
import { InsightsView } from "./insights/InsightsView";
import { ModulesTab } from "./modules/ModuleView";
import { OperatorView } from "./operators/OperatorView";
import { TraceView, type TraceFocus } from "./trace/TraceView";
import { ErrorCard } from "../components/ErrorCard";
import { Notice } from "../components/Notice";
import { ParseProgress } from "../components/ParseProgress";
import { WarningsList } from "../components/WarningsList";
import type { OverviewState } from "../hooks/useOverview";
import type { Theme } from "../hooks/useTheme";
import { Overview } from "./overview/Overview";

interface SelectedFileProps {
  selection: Selection;
  span: SpanInfo;
  overview: OverviewState;
  theme: Theme;
  view?: ViewId;
  /** Workers of the run with this span ready (the Trace view's "all ranks"). */
  workers?: string[];
  traceFocus?: TraceFocus | null;
  onShowInTrace?: (row: number) => void;
}

/** What the selected file has to show: its Overview, its progress, or why it failed. */
export function SelectedFile({ selection, span, overview, theme, view = "overview", workers, traceFocus, onShowInTrace }: SelectedFileProps) {
  if (span.state === "error") {
    return (
      <>
        <ErrorCard
          title={`This file could not be read: ${span.path}`}
          message={span.error ?? "Unknown error"}
          detail="Other files and runs are not affected; pick one above."
        />
        <WarningsList warnings={span.warnings} />
      </>
    );
  }
  if (span.state === "queued" || span.state === "loading") {
    return <ParseProgress span={span} progress={overview.kind === "not-ready" ? overview.progress : undefined} />;
  }
  if (view === "operator") return <OperatorView selection={selection} theme={theme} onShowInTrace={onShowInTrace} />;
  if (view === "kernel") return <KernelView selection={selection} theme={theme} onShowInTrace={onShowInTrace} />;
  if (view === "memory") return <MemoryView selection={selection} theme={theme} />;
  if (view === "insights") return <InsightsView selection={selection} theme={theme} />;
  if (view === "trace") return <TraceView selection={selection} workers={workers} focus={traceFocus} theme={theme} />;
  if (view === "module") return <ModulesTab selection={selection} />;
  switch (overview.kind) {
    case "idle":
    case "fetching":
      return <Notice>Loading the overview of {span.path}…</Notice>;
    case "not-ready":
      return <ParseProgress span={{ ...span, state: "loading" }} progress={overview.progress} />;
    case "file-error":
      return <ErrorCard title={`This file could not be read: ${span.path}`} message={overview.error} />;
    case "fetch-error":
      return (
        <ErrorCard
          title="The overview could not be fetched"
          message={overview.error}
          detail={`run ${selection.run}, worker ${selection.worker}, span ${selection.span}`}
        />
      );
    case "ready":
      return <Overview data={overview.data} theme={theme} />;
  }
}
