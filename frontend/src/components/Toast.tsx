import { useEffect } from "react";

/** A small message in the corner that goes away by itself. */
export function Toast({ text, onDone, ms = 4000 }: { text: string | null; onDone: () => void; ms?: number }) {
  useEffect(() => {
    if (text === null) return;
    const t = setTimeout(onDone, ms);
    return () => clearTimeout(t);
  }, [text, onDone, ms]);
  if (text === null) return null;
  return (
    <div className="toast" role="status" data-testid="toast">
      {text}
    </div>
  );
}
