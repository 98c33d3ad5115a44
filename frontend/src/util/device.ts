/** A device as every view names it: "GPU 0", "XPU 1", "CPU" (the GPU summary, timeline tracks and
 * recommendations say "GPU 0"; memory and snapshot documents key devices as "GPU0", which stays the
 * value sent back to the server). */
export function deviceLabel(key: string): string {
  const m = /^([A-Za-z]+)\s*(\d+)$/.exec(key);
  return m ? `${m[1]} ${m[2]}` : key;
}
