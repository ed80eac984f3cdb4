/**
 * What a call sends, and the checks of what can be sent: a call fetch would
 * refuse, or one whose message is not JSON data, is never sent.
 *
 * @internal
 */
import type { Message } from "@a2a-js/sdk"
import * as FiberRef from "effect/FiberRef"
import type * as Redacted from "effect/Redacted"
import type * as A2AClientError from "../../../A2AClientError.js"
import type { CallOptions, Input } from "../../../RemoteAgent.js"
import * as ledgerKey from "../../ledger/key.js"
import * as IdempotencyKey from "../../wire/idempotencyKey.js"
import * as json from "../../wire/json.js"
import * as wireParts from "../../wire/parts.js"
import * as clientCall from "./call.js"

/**
 * The task a retry of a FAILED outcome follows, set by the retry policy
 * around the attempt. FAILED is terminal, so the retry must be a new task:
 * under the same request key the server would answer the FAILED one again.
 */
export const retryOfFailed: FiberRef.FiberRef<string | undefined> = FiberRef.unsafeMake<string | undefined>(undefined)

/**
 * The request key of a call: its own, or, in a retry of a FAILED task, one
 * derived from it and that task's id, so that a repeat of the retry still
 * finds the retry's run.
 */
export const keyFor = (options: CallOptions | undefined, failedTaskId: string | undefined): CallOptions | undefined => {
  const key = options?.idempotencyKey
  if (key === undefined || key === "" || failedTaskId === undefined) return options
  return {
    ...options,
    idempotencyKey: ledgerKey.deriveKey({
      contextId: "",
      operation: "effect-a2a/retry-of-failed",
      params: { key, failedTaskId }
    })
  }
}

/** The SDK message of a call; an idempotency key also goes into its metadata. */
export const messageOf = (input: Input, options: CallOptions | undefined): Message => {
  const key = options?.idempotencyKey
  if (typeof input === "string") {
    const metadata = key === undefined ? undefined : { [IdempotencyKey.metadataKey]: key }
    return wireParts.userMessage([wireParts.textPart(input)], undefined, undefined, metadata)
  }
  return wireParts.userMessage(
    input.parts.map(wireParts.toWirePart),
    input.contextId,
    input.taskId,
    key === undefined
      ? input.metadata === undefined ? undefined : { ...input.metadata }
      : { ...input.metadata, [IdempotencyKey.metadataKey]: key }
  )
}

const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// What fetch refuses in a header value: a control character other than tab (DEL included), or one beyond a byte.
const badHeaderValue = /[^\t\u0020-\u007e\u0080-\u00ff]/
const unsendableValue = "it holds a control character other than tab, or a character beyond Latin-1"

/** Why `headers` cannot be sent, or none. */
export const headersProblem = (
  headers: Readonly<Record<string, string | Redacted.Redacted>> | undefined,
  whose: string
): string | undefined => {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!headerName.test(name)) return `${whose} header name ${JSON.stringify(name)} is not an HTTP token`
    // The value is read to be checked, never told: the message names the header only.
    if (badHeaderValue.test(clientCall.headerText(value))) {
      return `the value of ${whose} header ${name} cannot be sent (${unsendableValue})`
    }
  }
  return undefined
}

/**
 * Why a call's options cannot be sent, or none: a header fetch would refuse,
 * or an idempotency key it would refuse or change (it trims spaces and tabs
 * at the ends, and the key in the metadata must be the same).
 */
const optionsProblem = (options: CallOptions | undefined): string | undefined => {
  if (options === undefined) return undefined
  const key = options.idempotencyKey
  if (key !== undefined && badHeaderValue.test(key)) {
    return `the idempotency key cannot be sent as a header (${unsendableValue})`
  }
  if (key !== undefined && /^[\t ]|[\t ]$/.test(key)) return "the idempotency key starts or ends with a space or a tab"
  return headersProblem(options.headers, "the call's")
}

/** Where a message's data parts or metadata stop being JSON data, or none. */
const inputProblem = (input: Input): string | undefined => {
  if (typeof input === "string") return undefined
  const problem = json.partsNotJson(input.parts, "parts") ??
    (input.metadata === undefined ? undefined : json.notJson(input.metadata, "metadata"))
  return problem === undefined ? undefined : `the message is not JSON data at ${problem.path}: ${problem.found}`
}

/** Why a call cannot be sent, or none; a call without a message has no `input`. */
export type Unsendable = (options: CallOptions | undefined, input?: Input) => string | undefined

/** The check of every call of an agent that sends `agentHeaders`. */
export const unsendable = (
  agentHeaders: Readonly<Record<string, string | Redacted.Redacted>> | undefined
): Unsendable => {
  // The agent's own headers go with every request: checked once, reported on every call.
  const agentHeadersProblem = headersProblem(agentHeaders, "the agent's")
  return (options, input) =>
    agentHeadersProblem ?? optionsProblem(options) ?? (input === undefined ? undefined : inputProblem(input))
}

export const inputIds = (input: Input): clientCall.Ids =>
  typeof input === "string" ? {} : { taskId: input.taskId, contextId: input.contextId }

/** The typed error of a call that is never sent, because `detail`. */
export const invalidRequest = (
  agent: string,
  operation: A2AClientError.Operation,
  ids: clientCall.Ids,
  detail: string
) => clientCall.callError(agent, operation, "InvalidRequest", "NotSent", detail, ids)
