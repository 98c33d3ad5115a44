import type { AboutNote } from "../../api/types";
import { Card } from "../../components/Card";

/** "About this trace": time the trace cannot explain, or a trace that is not a run of steps; nothing otherwise. */
export function AboutTrace({ notes }: { notes: AboutNote[] | undefined }) {
  if (!notes || notes.length === 0) return null;
  return (
    <Card title="About this trace" testId="about-trace">
      <ul className="recommendations">
        {notes.map((n, i) => (
          <li key={i} data-kind={n.kind}>
            {n.text}
          </li>
        ))}
      </ul>
    </Card>
  );
}
