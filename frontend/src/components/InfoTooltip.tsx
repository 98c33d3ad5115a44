import { useId } from "react";

interface InfoTooltipProps {
  label: string;
  text: string;
}

/**
 * A label followed by an info mark that shows a definition on hover or keyboard focus. The text is
 * also the mark's accessible description.
 */
export function InfoTooltip({ label, text }: InfoTooltipProps) {
  const id = useId();
  return (
    <span className="info-label">
      {label}
      <span className="info-mark" tabIndex={0} role="button" aria-label={`What is ${label}?`} aria-describedby={id}>
        ?
        <span className="info-bubble" role="tooltip" id={id}>
          {text}
        </span>
      </span>
    </span>
  );
}
