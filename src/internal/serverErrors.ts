/**
 * The errors and constants a server's public modules name, apart from the
 * server's code, so that importing those modules (as the index does) loads
 * no server: a client pays for what it uses.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as internalTransport from "./wire/transport.js"

/** The agent card's well-known path. */
export const cardPath = "/.well-known/agent-card.json"

/** A configuration the executor refuses to start with; see `AgentExecutor.ConfigurationError`. */
export class ConfigurationError extends Schema.TaggedError<ConfigurationError>("effect-a2a/ConfigurationError")(
  "ConfigurationError",
  {
    reason: Schema.Literal("DebugErrorsInProduction", "InvalidOption"),
    message: Schema.String
  }
) {}

/** @internal */
export class TaskStoreError extends Schema.TaggedError<TaskStoreError>("effect-a2a/TaskStoreError")(
  "TaskStoreError",
  {
    reason: Schema.Literal("MissingPackage", "Driver", "Migration", "Connection"),
    message: Schema.String
  }
) {}

/**
 * A transport asked for that cannot be served: its optional packages are
 * not installed.
 *
 * @internal
 */
export class TransportError extends Schema.TaggedError<TransportError>("effect-a2a/TransportError")(
  "TransportError",
  {
    reason: Schema.Literal("MissingPackage"),
    transport: internalTransport.Transport,
    message: Schema.String
  }
) {}
