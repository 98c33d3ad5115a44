/** A copy of `set` with `key` removed if it was there, added if it was not. */
export function toggled<K>(set: ReadonlySet<K>, key: K): Set<K> {
  const next = new Set(set);
  if (next.has(key)) next.delete(key);
  else next.add(key);
  return next;
}
