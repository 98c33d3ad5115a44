import type { ReactNode } from "react";

interface NoticeProps {
  kind?: "info" | "warning";
  children: ReactNode;
}

/** A one-line status message: "loading…", "cannot reach the server", "no runs". */
export function Notice({ kind = "info", children }: NoticeProps) {
  return (
    <div className={`notice notice-${kind}`} role={kind === "warning" ? "alert" : "status"}>
      {children}
    </div>
  );
}
