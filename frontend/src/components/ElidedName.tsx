// A long name (ROCm kernels, autograd nodes, stack frames) on one line, elided in the middle when the
// column is too narrow: the head shrinks behind an ellipsis, the tail (where names differ) stays. The
// whole name is the hover title and stays in the DOM, so copying and searching still see all of it.

/** The tail kept whole: the last third of the name, at most 24 characters. */
export function splitForElision(text: string): [string, string] {
  const tail = Math.min(24, Math.floor(text.length / 3));
  return [text.slice(0, text.length - tail), text.slice(text.length - tail)];
}

export function ElidedName({ text, className = "" }: { text: string; className?: string }) {
  const [head, tail] = splitForElision(text);
  return (
    <span className={`cell-name elided ${className}`.trim()} title={text} data-testid="elided-name">
      <span className="elided-head">{head}</span>
      <span className="elided-tail">{tail}</span>
    </span>
  );
}
