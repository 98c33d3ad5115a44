// The Hang tab: why the run's job hung, from its flight-recorder dumps (routes hang, hang_entries).
// The verdict (root cause first), the findings (under each, what its ranks' loaded profiler traces
// say: FindingTraces), one table per process group (rank × last enqueued /
// started / completed collective) with its stuck instance, and the entries of a selected rank with
// their frames. Every string from a dump is shown as text.
import { useState } from "react";
import { hangEntriesUrl, hangUrl } from "../../api/routes";
import type { HangEntriesResponse, HangEntry, HangFinding, HangGroup, HangOp, HangRankRow, HangResponse } from "../../api/types";
import { Card } from "../../components/Card";
import { Notice } from "../../components/Notice";
import { PagedTable, type Column, wholePage } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { FindingTraces } from "./FindingTraces";

interface HangViewProps {
  run: string;
  /** Open a rank's profiler trace (worker, span) from a finding. */
  onOpenTrace?: (worker: string, span: string) => void;
}

const KIND_LABEL: Record<string, string> = {
  missing_ranks: "missing ranks",
  mismatch: "mismatch",
  not_started: "not started",
  not_completed: "not completed",
  no_dump: "no dump",
};

/** "1, 2, 3" (the first 16, then "… and N more"). */
export function rankList(ranks: number[]): string {
  if (ranks.length === 0) return "–";
  const shown = ranks.slice(0, 16).join(", ");
  return ranks.length > 16 ? `${shown} … and ${ranks.length - 16} more` : shown;
}

function opText(op: HangOp | null | undefined): string {
  if (!op) return "–";
  return `${op.op ?? "?"} #${op.collective_seq_id}`;
}

export function HangView({ run, onOpenTrace }: HangViewProps) {
  const state = useRemote<HangResponse>(hangUrl(run));
  const [rank, setRank] = useState<number | null>(null);
  if (state.kind !== "ready") return <RemoteStatus state={state} what="hang analysis" />;
  const d = state.data;
  const shownRank = rank ?? d.findings.find((f) => f.root_cause)?.missing_ranks[0] ?? d.ranks[0]?.rank ?? null;
  return (
    <div className="hang-view" data-testid="hang-page">
      <Card title={`Verdict (${d.dumps} dumps, ${d.ranks.length} read)`} testId="hang-verdict">
        <ol className="hang-verdict">
          {d.verdict.map((text, i) => (
            <li key={i} data-testid="hang-sentence" className={i === 0 && d.findings[0]?.root_cause ? "hang-root" : undefined}>
              {text}
            </li>
          ))}
        </ol>
      </Card>
      {d.findings.length > 0 ? <FindingsCard findings={d.findings} traces={d.traces} onOpenTrace={onOpenTrace} onRank={setRank} /> : null}
      {d.trace_errors && d.trace_errors.length > 0 ? (
        <Card title="Unreadable traces" testId="hang-trace-errors">
          {d.trace_errors.map((e) => (
            <Notice key={`${e.rank}\u0000${e.path}`} kind="warning">
              Rank {e.rank}'s trace {e.path} could not be linked: {e.error}
            </Notice>
          ))}
        </Card>
      ) : null}
      {d.groups.map((g) => (
        <GroupCard key={`${g.pg_name}\u0000${g.pg_desc}`} group={g} onRank={setRank} />
      ))}
      {d.unreadable.length > 0 ? (
        <Card title="Unreadable dumps" testId="hang-unreadable">
          {d.unreadable.map((u) => (
            <Notice key={u.path} kind="warning">
              {u.path} (rank {u.rank ?? "?"}): {u.error}
            </Notice>
          ))}
        </Card>
      ) : null}
      {shownRank !== null ? (
        <RankEntries run={run} rank={shownRank} ranks={d.ranks.map((r) => r.rank)} onRank={setRank} />
      ) : null}
    </div>
  );
}

function FindingsCard({
  findings,
  traces,
  onOpenTrace,
  onRank,
}: {
  findings: HangFinding[];
  traces: HangResponse["traces"];
  onOpenTrace?: (worker: string, span: string) => void;
  onRank: (rank: number) => void;
}) {
  // a finding's trace links open under it from the start
  const [open, setOpen] = useState<Set<string>>(() => new Set(findings.flatMap((f, i) => (f.in_traces && Object.keys(f.in_traces).length > 0 ? [String(i)] : []))));
  const columns: Column<HangFinding>[] = [
    { key: "kind", label: "Finding", render: (f) => `${KIND_LABEL[f.kind] ?? f.kind}${f.root_cause ? " (root cause)" : f.explained_by !== null ? ` (held by ${f.explained_by + 1})` : ""}` },
    { key: "group", label: "Group", render: (f) => (f.pg_desc || f.pg_name ? `${f.pg_desc ?? ""} (pg ${f.pg_name ?? "?"})` : "–") },
    { key: "op", label: "Collective", render: (f) => (f.op ? `${f.op}${f.collective_seq_id !== null ? ` #${f.collective_seq_id}` : ""}` : "–") },
    { key: "present", label: "Present ranks", render: (f) => rankList(f.ranks_present) },
    {
      key: "missing",
      label: "Missing / odd ranks",
      render: (f) => (
        <span>
          {f.missing_ranks.slice(0, 16).map((r) => (
            <button key={r} type="button" className="link-button hang-link" data-testid="hang-rank-link" onClick={() => onRank(r)}>
              {r}
            </button>
          ))}
          {f.missing_ranks.length > 16 ? ` … and ${f.missing_ranks.length - 16} more` : null}
        </span>
      ),
    },
    { key: "detail", label: "Detail", className: "name", render: (f) => <span className="cell-name">{f.detail}</span> },
    {
      key: "trace",
      label: "Traces",
      render: (f) =>
        f.trace_ranks.length === 0 || !onOpenTrace
          ? "–"
          : f.trace_ranks.slice(0, 4).map((r) => {
              const t = traces[String(r)];
              const at = f.in_traces?.[String(r)];
              const where = at ? (at.last_seq < 0 ? " (no Seq)" : at.has_instance ? ` (reached #${f.collective_seq_id})` : ` (ends at #${at.last_seq})`) : "";
              return t ? (
                <button key={r} type="button" className="link-button hang-link" data-testid="hang-trace-link" onClick={() => onOpenTrace(t.worker, t.span)}>
                  rank {r}
                  {where}
                </button>
              ) : null;
            }),
    },
  ];
  return (
    <Card title={`Findings (${findings.length})`} testId="hang-findings">
      <PagedTable
        testId="hang-findings-table"
        rowTestId="hang-finding-row"
        columns={columns}
        {...wholePage(findings)}
        rowKey={(_, i) => String(i)}
        expanded={open}
        onToggle={(key) => setOpen((prev) => toggled(prev, key))}
        renderExpanded={(f) => <FindingTraces finding={f} />}
      />
    </Card>
  );
}

function GroupCard({ group, onRank }: { group: HangGroup; onRank: (rank: number) => void }) {
  const columns: Column<HangRankRow>[] = [
    { key: "rank", label: "Rank", numeric: true, render: (r) => String(r.rank) },
    { key: "dump", label: "Dump", render: (r) => r.dump },
    { key: "enq", label: "Last enqueued", render: (r) => opText(r.last_enqueued) },
    { key: "start", label: "Last started", render: (r) => opText(r.last_started) },
    { key: "done", label: "Last completed", render: (r) => opText(r.last_completed) },
  ];
  const s = group.stuck;
  return (
    <Card title={`Group ${group.pg_desc || "(no description)"} (pg ${group.pg_name ?? "?"}, ${group.ranks.length} ranks)`} testId="hang-group">
      {s ? (
        <Notice kind={s.missing_ranks.length > 0 ? "warning" : "info"}>
          <span data-testid="hang-stuck">
            Stuck at {s.op ?? "?"} #{s.collective_seq_id}: present {rankList(s.ranks_present)}; missing {rankList(s.missing_ranks)}
            {s.unknown_ranks.length > 0 ? `; unknown (ring buffer wrapped) ${rankList(s.unknown_ranks)}` : ""}
            {s.ranks_without_dump.length > 0 ? `; no dump ${rankList(s.ranks_without_dump)}` : ""}
          </span>
        </Notice>
      ) : (
        <Notice>Every rank of this group reached the same collective.</Notice>
      )}
      <PagedTable
        testId="hang-group-table"
        columns={columns}
        {...wholePage(group.per_rank)}
        rowKey={(r) => String(r.rank)}
        onRowClick={(r) => onRank(r.rank)}
      />
    </Card>
  );
}

function RankEntries({ run, rank, ranks, onRank }: { run: string; rank: number; ranks: number[]; onRank: (rank: number) => void }) {
  const state = useRemote<HangEntriesResponse>(hangEntriesUrl(run, rank));
  const [open, setOpen] = useState<Set<string>>(new Set());
  const columns: Column<HangEntry>[] = [
    { key: "record_id", label: "Record", numeric: true, render: (e) => String(e.record_id ?? "–") },
    { key: "group", label: "Group", render: (e) => `${e.pg_desc ?? ""} (pg ${e.pg_name ?? "?"})` },
    { key: "seq", label: "Seq", numeric: true, render: (e) => String(e.collective_seq_id ?? "–") },
    { key: "op", label: "Op", className: "name", render: (e) => <span className="cell-name">{e.op ?? "?"}</span> },
    { key: "state", label: "State", render: (e) => e.state ?? "–" },
    { key: "sizes", label: "Sizes (in, out)", className: "name", render: (e) => <span className="cell-name">{e.sizes}</span> },
    { key: "dtypes", label: "Dtypes", render: (e) => e.dtypes },
  ];
  return (
    <Card title={`Entries of rank ${rank}`} testId="hang-entries">
      <div className="hang-rank-picker">
        Rank{" "}
        <select data-testid="hang-rank-select" value={rank} onChange={(ev) => onRank(Number(ev.target.value))}>
          {ranks.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </div>
      {state.kind !== "ready" ? (
        <RemoteStatus state={state} what="entries" />
      ) : (
        <>
          <Notice>
            The newest {state.data.entries.length} of {state.data.entries_total} entries of {state.data.path}; click a row for its frames.
          </Notice>
          <PagedTable
            testId="hang-entries-table"
            rowTestId="hang-entry-row"
            columns={columns}
            {...wholePage([...state.data.entries].reverse())}
            rowKey={(e, i) => `${e.record_id ?? i}`}
            expanded={open}
            onToggle={(key) => setOpen((prev) => toggled(prev, key))}
            renderExpanded={(e) =>
              e.frames.length === 0 ? (
                <span>No frames recorded.</span>
              ) : (
                <ol className="hang-frames">
                  {e.frames.map((f, i) => (
                    <li key={i}>{f}</li>
                  ))}
                </ol>
              )
            }
          />
        </>
      )}
    </Card>
  );
}

/** A copy of `keys` with `key` added or removed. */
function toggled(keys: Set<string>, key: string): Set<string> {
  const next = new Set(keys);
  if (next.has(key)) next.delete(key);
  else next.add(key);
  return next;
}
