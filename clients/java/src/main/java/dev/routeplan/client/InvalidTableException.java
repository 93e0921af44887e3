package dev.routeplan.client;

/** A routing-table document a reader refuses (docs/routing-spec.md §1), with the reason. */
public class InvalidTableException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public InvalidTableException(String message) {
    super(message);
  }

  public InvalidTableException(String message, Throwable cause) {
    super(message, cause);
  }
}
