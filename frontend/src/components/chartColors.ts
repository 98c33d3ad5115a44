import type { Theme } from "../hooks/useTheme";

/** Text color for chart labels and legends; matches --text in styles.css. */
export function chartTextColor(theme: Theme): string {
  return theme === "dark" ? "#e3e3e3" : "#212121";
}
