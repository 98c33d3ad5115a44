// Whether the selected trace has [memory] events: the Memory tab is shown only then.
import type { Selection } from "../api/types";
import type { MemoryReady } from "../api/memoryTypes";
import { memoryUrl } from "../api/memory";
import { useRemote } from "../hooks/useRemote";

export function useMemoryAvailable(selection: Selection | null, ready: boolean): boolean {
  const state = useRemote<MemoryReady>(selection && ready && selection.worker !== "" ? memoryUrl(selection, null, 1) : null);
  return state.kind === "ready" && Array.isArray(state.data.devices) && state.data.devices.length > 0;
}
