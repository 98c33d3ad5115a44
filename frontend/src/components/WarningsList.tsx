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
