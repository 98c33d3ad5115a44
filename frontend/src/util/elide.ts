// Middle elision of long names (operator paths, kernels) that share a long prefix or suffix.

/**
 * `text` in at most `max` characters (code points): the start and the end kept, the middle replaced
 * by "…". The end gets the larger share, since names that share a prefix ("autograd::engine::
 * evaluate_function: …") differ at their end. Text that fits comes back unchanged.
 */
export function elideMiddle(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max || max < 2) return text;
  const keep = max - 1;
  const head = Math.floor(keep * 0.4);
  const tail = keep - head;
  return `${chars.slice(0, head).join("")}\u2026${chars.slice(chars.length - tail).join("")}`;
}
