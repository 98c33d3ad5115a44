import type { ReactNode } from "react";

interface CardProps {
  title: ReactNode;
  children: ReactNode;
  className?: string;
  testId?: string;
}

/** A titled panel; every section of a view is one. */
export function Card({ title, children, className, testId }: CardProps) {
  return (
    <section className={className ? `card ${className}` : "card"} data-testid={testId}>
      <h2 className="card-title">{title}</h2>
      <div className="card-body">{children}</div>
    </section>
  );
}
