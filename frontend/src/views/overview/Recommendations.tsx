import { Card } from "../../components/Card";

/** The server's step-level recommendations, as plain text. None: no card (the Insights card below
 * says whether there is any recommendation at all, so the two never contradict each other). */
export function Recommendations({ items }: { items: string[] }) {
  if (items.length === 0) return null;
  return (
    <Card title="Recommendations">
      <ul className="recommendations" data-testid="recommendations">
        {items.map((text, i) => (
          <li key={i}>{text}</li>
        ))}
      </ul>
    </Card>
  );
}
