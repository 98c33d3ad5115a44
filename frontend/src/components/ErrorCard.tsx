interface ErrorCardProps {
  title: string;
  message: string;
  detail?: string;
}

/** A failure shown in place of the content it stopped; the rest of the UI keeps working. */
export function ErrorCard({ title, message, detail }: ErrorCardProps) {
  return (
    <div className="error-card" role="alert" data-testid="error-card">
      <div className="error-card-title">{title}</div>
      <pre className="error-card-message">{message}</pre>
      {detail ? <div className="error-card-detail">{detail}</div> : null}
    </div>
  );
}
