// A long name (ROCm kernels, autograd nodes, stack frames) on one line, elided in the middle when it is
// wider than its cell allows (520 px): the head is cut behind an ellipsis, the tail (where names that
// share a prefix differ) stays whole. The whole name is the hover title and stays in the DOM as one
// line of text (inline boxes only), so copying, searching and innerText still see all of it.
import { useLayoutEffect, useRef } from "react";

/** The tail kept whole: the last third of the name, at most 24 characters; spaces at the cut go to the tail. */
export function splitForElision(text: string): [string, string] {
  let cut = text.length - Math.min(24, Math.floor(text.length / 3));
  while (cut > 0 && text[cut - 1] === " ") cut -= 1;
  return [text.slice(0, cut), text.slice(cut)];
}

/**
 * The head's width (px) that makes the name fit its box: the box's width less the tail's, when the
 * name overflows the box; null when it fits (no ellipsis).
 */
export function headWidth(boxWidth: number, contentWidth: number, tailWidth: number): number | null {
  if (contentWidth <= boxWidth + 0.5) return null;
  return Math.max(16, boxWidth - tailWidth);
}

export function ElidedName({ text, className = "" }: { text: string; className?: string }) {
  const [head, tail] = splitForElision(text);
  const boxRef = useRef<HTMLSpanElement>(null);
  const headRef = useRef<HTMLSpanElement>(null);
  const tailRef = useRef<HTMLSpanElement>(null);
  useLayoutEffect(() => {
    const box = boxRef.current;
    const h = headRef.current;
    const t = tailRef.current;
    if (!box || !h || !t) return;
    h.style.maxWidth = "";
    const w = headWidth(box.clientWidth, box.scrollWidth, t.offsetWidth);
    if (w !== null) h.style.maxWidth = `${w}px`;
  }, [text]);
  return (
    <span ref={boxRef} className={`cell-name elided ${className}`.trim()} title={text} data-testid="elided-name">
      <span ref={headRef} className="elided-head">
        {head}
      </span>
      <span ref={tailRef} className="elided-tail">
        {tail}
      </span>
    </span>
  );
}
