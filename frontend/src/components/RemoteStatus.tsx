import type { RemoteState } from "../hooks/useRemote";
import { ErrorCard } from "./ErrorCard";
import { Notice } from "./Notice";

interface RemoteStatusProps<T> {
  state: RemoteState<T>;
  what: string;
}

/** Loading / not-ready / error line for one route; renders nothing once data is there. */
export function RemoteStatus<T>({ state, what }: RemoteStatusProps<T>) {
  switch (state.kind) {
    case "idle":
      return null;
    case "fetching":
      return state.previous === null ? <Notice>Loading {what}…</Notice> : null;
    case "not-ready":
      return (
        <Notice>
          Parsing the trace{state.progress !== null ? `: ${Math.round(state.progress * 100)} %` : "…"}
        </Notice>
      );
    case "file-error":
      return <ErrorCard title={`The ${what} could not be computed`} message={state.error} />;
    case "fetch-error":
      return <ErrorCard title={`The ${what} could not be fetched`} message={state.error} />;
    case "ready":
      return null;
  }
}
