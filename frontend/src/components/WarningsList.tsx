interface WarningsListProps {
  warnings: string[];
}

/** Parser warnings for a file, collapsed by default. Renders nothing when there are none. */
export function WarningsList({ warnings }: WarningsListProps) {
  if (warnings.length === 0) return null;
  return (
    <details className="warnings" data-testid="warnings">
      <summary>
        {warnings.length === 1 ? "1 warning" : `${warnings.length} warnings`} while reading this file
      </summary>
      <ul>
        {warnings.map((w, i) => (
          <li key={i}>{w}</li>
        ))}
      </ul>
    </details>
  );
}

interface FileNotesProps {
  /** Facts about the file that need no action (events without a duration, Composer's trainer spans). */
  notes?: string[] | null;
}

/** "About this file": the file's notes, collapsed and quiet (not a warning). Nothing when there are none. */
export function FileNotes({ notes }: FileNotesProps) {
  if (!notes || notes.length === 0) return null;
  return (
    <details className="file-notes" data-testid="file-notes">
      <summary>About this file</summary>
      <ul>
        {notes.map((n, i) => (
          <li key={i}>{n}</li>
        ))}
      </ul>
    </details>
  );
}
