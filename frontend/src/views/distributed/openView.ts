// Switches the app's view from inside a card (the Overview's Insights card) without a prop chain: the
// view lives in the hash, and useView follows hashchange events.
import { writeHashParam } from "../../state/hashState";

export function openView(view: string, win: Window = window): void {
  writeHashParam("view", view, win);
  win.dispatchEvent(new HashChangeEvent("hashchange"));
}
