import { Card } from "../../components/Card";

/** The server's recommendations, as plain text. */
export function Recommendations({ items }: { items: string[] }) {
  return (
    <Card title="Recommendations">
      {items.length === 0 ? (
        <p className="muted" data-testid="recommendations">
          No recommendations for this trace.
        </p>
      ) : (
        <ul className="recommendations" data-testid="recommendations">
          {items.map((text, i) => (
            <li key={i}>{text}</li>
          ))}
        </ul>
      )}
    </Card>
  );
}
