// The labelled controls of the view toolbars: a select, a text/search box and the CSV download link.
// Each renders the same markup as the hand-written ones did (label.selector > span.selector-label).

export interface SelectOption {
  value: string;
  label: string;
  /** Shown on hover of the option. */
  title?: string;
}

export function SelectField({
  label,
  testId,
  value,
  options,
  onChange,
  empty,
}: {
  label: string;
  testId: string;
  value: string;
  options: SelectOption[];
  onChange: (value: string) => void;
  /** With no options: the text of the one option a disabled select shows instead of an empty one. */
  empty?: { label: string; title: string };
}) {
  if (options.length === 0 && empty) {
    return (
      <label className="selector" title={empty.title}>
        <span className="selector-label">{label}</span>
        <select data-testid={testId} value="" disabled aria-disabled="true">
          <option value="">{empty.label}</option>
        </select>
      </label>
    );
  }
  return (
    <label className="selector">
      <span className="selector-label">{label}</span>
      <select data-testid={testId} value={value} onChange={(e) => onChange(e.target.value)}>
        {options.map((o) => (
          <option key={o.value} value={o.value} title={o.title}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}

export function TextField({
  label,
  testId,
  placeholder,
  value,
  onChange,
  type = "search",
  invalid = false,
}: {
  label: string;
  testId: string;
  placeholder: string;
  value: string;
  onChange: (value: string) => void;
  /** "search" (the default) or "text". */
  type?: "search" | "text";
  /** Marks the box as holding text that does not parse. */
  invalid?: boolean;
}) {
  return (
    <label className="selector">
      <span className="selector-label">{label}</span>
      <input
        type={type}
        data-testid={testId}
        placeholder={placeholder}
        className={invalid ? "mem-input-invalid" : undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
    </label>
  );
}

export function CsvLink({ href, testId = "csv-link" }: { href: string; testId?: string }) {
  return (
    <a className="csv-link" data-testid={testId} href={href} download>
      Download CSV
    </a>
  );
}
