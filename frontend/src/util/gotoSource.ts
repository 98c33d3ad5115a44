// "Go to source": the VS Code TensorBoard integration listens on the page two levels up (the plugin
// iframe sits inside TensorBoard's page, which sits inside VS Code's webview) for
// {filename, line} with a 0-based line. Outside VS Code the message is harmless; the UI also shows
// path:line and copies it to the clipboard.
import type { StackFrame } from "../api/types";

export interface SourceMessage {
  filename: string;
  line: number;
}

/** The message for a frame (0-based line), or null when the frame has no file/line. */
export function sourceMessage(frame: Pick<StackFrame, "file" | "line">): SourceMessage | null {
  if (!frame.file || frame.line === null || frame.line === undefined) return null;
  return { filename: frame.file, line: frame.line - 1 };
}

/** Posts the message to window.parent.parent and copies "path:line" (1-based, as shown). */
export function goToSource(frame: Pick<StackFrame, "file" | "line">, win: Window = window): string | null {
  const msg = sourceMessage(frame);
  if (!msg) return null;
  try {
    // Target origin "*": VS Code's webview origin (vscode-webview://<random id>) is not known in
    // advance, so no fixed origin can be named. Hence the message holds nothing but the two fields
    // the user just clicked, a source path and a line number, both already shown on screen (a
    // fresh object: no other property of the frame can ride along). See docs/SECURITY.md.
    const outgoing: SourceMessage = { filename: String(msg.filename), line: Math.trunc(Number(msg.line)) };
    win.parent.parent.postMessage(outgoing, "*");
  } catch {
    // a cross-origin parent that refuses: the toast still shows where to look
  }
  const text = `${msg.filename}:${msg.line + 1}`;
  try {
    const clip = win.navigator?.clipboard;
    if (clip) void clip.writeText(text).catch(() => undefined);
  } catch {
    // clipboard unavailable (insecure context, permissions)
  }
  return text;
}
