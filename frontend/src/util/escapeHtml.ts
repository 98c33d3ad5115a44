// ECharts renders tooltip formatter strings as HTML, so every trace-derived string that goes into one
// passes through here first.
const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (ch) => ENTITIES[ch] ?? ch);
}
