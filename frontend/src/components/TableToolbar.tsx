// The toolbar of a server-side table view (Operator, GPU Kernel): a group-by select, search boxes
// and the CSV link of what the table shows.
import type { SearchBox } from "../hooks/useSearchBox";
import { CsvLink, SelectField, TextField } from "./Fields";

export interface ToolbarSearch {
  label: string;
  testId: string;
  placeholder: string;
  box: SearchBox;
}

export function TableToolbar<G extends string>({
  groupBy,
  onEdit,
  searches,
  csvUrl,
}: {
  groupBy: { testId: string; value: G; options: { value: G; label: string }[]; onChange: (value: G) => void };
  /** Runs after each change of the group-by (e.g. back to the first page); search boxes have their own. */
  onEdit?: () => void;
  searches: ToolbarSearch[];
  csvUrl: string;
}) {
  return (
    <div className="view-controls">
      <SelectField
        label="Group by"
        testId={groupBy.testId}
        value={groupBy.value}
        options={groupBy.options}
        onChange={(v) => {
          groupBy.onChange(v as G);
          onEdit?.();
        }}
      />
      {searches.map((s) => (
        <TextField key={s.testId} label={s.label} testId={s.testId} placeholder={s.placeholder} {...s.box.field} />
      ))}
      <CsvLink href={csvUrl} />
    </div>
  );
}
