import { Component, type ErrorInfo, type ReactNode } from "react";
import { ErrorCard } from "./ErrorCard";

interface ErrorBoundaryProps {
  title?: string;
  children: ReactNode;
}

interface ErrorBoundaryState {
  error: Error | null;
}

/** Catches a rendering failure below it and shows it as an error card with a retry button. */
export class ErrorBoundary extends Component<ErrorBoundaryProps, ErrorBoundaryState> {
  state: ErrorBoundaryState = { error: null };

  static getDerivedStateFromError(error: unknown): ErrorBoundaryState {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error("Kinetoscope UI error", error, info.componentStack);
  }

  private readonly retry = () => this.setState({ error: null });

  render(): ReactNode {
    if (this.state.error) {
      return (
        <div className="boundary">
          <ErrorCard
            title={this.props.title ?? "The view failed to render"}
            message={this.state.error.message || String(this.state.error)}
          />
          <button type="button" className="button" onClick={this.retry}>
            Try again
          </button>
        </div>
      );
    }
    return this.props.children;
  }
}
