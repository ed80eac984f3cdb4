/**
 * The shape of an A2A v1.0 request as ProtoJSON writes it, checked before
 * the SDK's codecs read it. Those codecs coerce: a number where a string
 * belongs becomes its text (`messageId: 5` is "5"), an object becomes
 * "[object Object]", anything truthy is `true`, and a `null` in a list
 * throws a TypeError that surfaces as an internal error. One check for the
 * JSON transports (JSON-RPC, HTTP+JSON), so that a wrong type is refused as
 * invalid params naming the field, the same on each.
 *
 * As ProtoJSON reads it: a `null` field is an absent one; a 32-bit integer
 * may be a JSON number or a decimal string; an enum its name or its number;
 * `bytes` a base64 string; unknown fields are let through, as the SDK lets
 * them through. A part holds exactly one of its contents.
 *
 * @internal
 */

type Kind =
  | "string"
  | "bool"
  | "int"
  | "bytes"
  | "struct"
  | "value"
  | { readonly enum: ReadonlyArray<string> }
  | { readonly repeated: Kind }
  | Shape

interface Shape {
  readonly fields: Readonly<Record<string, Kind>>
  /** Exactly one of these fields is set. */
  readonly oneOf?: ReadonlyArray<string>
}

const part: Shape = {
  fields: { text: "string", raw: "bytes", url: "string", data: "value", metadata: "struct", filename: "string", mediaType: "string" },
  oneOf: ["text", "raw", "url", "data"]
}

const message: Shape = {
  fields: {
    messageId: "string",
    contextId: "string",
    taskId: "string",
    role: { enum: ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"] },
    parts: { repeated: part },
    metadata: "struct",
    extensions: { repeated: "string" },
    referenceTaskIds: { repeated: "string" }
  }
}

const pushConfig: Shape = {
  fields: {
    tenant: "string",
    id: "string",
    taskId: "string",
    url: "string",
    token: "string",
    authentication: { fields: { scheme: "string", credentials: "string" } }
  }
}

const sendMessage: Shape = {
  fields: {
    tenant: "string",
    message,
    configuration: {
      fields: {
        acceptedOutputModes: { repeated: "string" },
        taskPushNotificationConfig: pushConfig,
        historyLength: "int",
        returnImmediately: "bool"
      }
    },
    metadata: "struct"
  }
}

const taskState = {
  enum: [
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED"
  ]
}

const byTask: Shape = { fields: { tenant: "string", id: "string" } }
const configOfTask: Shape = { fields: { tenant: "string", taskId: "string", id: "string" } }

/** The params of each v1.0 method, by its JSON-RPC name. */
const methods: Readonly<Record<string, Shape>> = {
  SendMessage: sendMessage,
  SendStreamingMessage: sendMessage,
  GetTask: { fields: { ...byTask.fields, historyLength: "int" } },
  ListTasks: {
    fields: {
      tenant: "string",
      contextId: "string",
      status: taskState,
      pageSize: "int",
      pageToken: "string",
      historyLength: "int",
      statusTimestampAfter: "string",
      includeArtifacts: "bool"
    }
  },
  CancelTask: { fields: { ...byTask.fields, metadata: "struct" } },
  SubscribeToTask: byTask,
  CreateTaskPushNotificationConfig: pushConfig,
  GetTaskPushNotificationConfig: configOfTask,
  DeleteTaskPushNotificationConfig: configOfTask,
  ListTaskPushNotificationConfigs: { fields: { tenant: "string", taskId: "string", pageSize: "int", pageToken: "string" } },
  GetExtendedAgentCard: { fields: { tenant: "string" } }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const int32 = /^-?\d+$/
const base64 = /^[A-Za-z0-9+/_-]*={0,2}$/

const isInt32 = (value: unknown): boolean => {
  const number = typeof value === "string" && int32.test(value.trim()) ? Number(value) : value
  return typeof number === "number" && Number.isInteger(number) && number >= -(2 ** 31) && number < 2 ** 31
}

const describe = (kind: Kind): string => {
  if (typeof kind === "string") {
    switch (kind) {
      case "string":
        return "a string"
      case "bool":
        return "a boolean"
      case "int":
        return "a 32-bit integer"
      case "bytes":
        return "a base64 string"
      case "struct":
        return "an object"
      case "value":
        return "a JSON value"
    }
  }
  if ("enum" in kind) return `one of ${kind.enum.join(", ")}`
  if ("repeated" in kind) return "an array"
  return "an object"
}

// The field as the SDK's codecs read it: its camelCase name, else its proto (snake_case) name.
const fieldOf = (object: Record<string, unknown>, name: string): [string, unknown] => {
  const snake = name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)
  return object[name] !== undefined && object[name] !== null ? [name, object[name]] : [snake, object[snake]]
}

/** Where `value` is not of `kind`, and what was expected, or undefined. `path` names `value`. */
const problemOf = (value: unknown, kind: Kind, path: string): string | undefined => {
  const wrong = () => `${path} must be ${describe(kind)}`
  if (typeof kind === "string") {
    switch (kind) {
      case "string":
        return typeof value === "string" ? undefined : wrong()
      case "bool":
        return typeof value === "boolean" ? undefined : wrong()
      case "int":
        return isInt32(value) ? undefined : wrong()
      case "bytes":
        return typeof value === "string" && base64.test(value) ? undefined : wrong()
      case "struct":
        return isObject(value) ? undefined : wrong()
      case "value":
        return undefined
    }
  }
  if ("enum" in kind) {
    return (typeof value === "string" && kind.enum.includes(value)) || (Number.isInteger(value) && isInt32(value))
      ? undefined
      : wrong()
  }
  if ("repeated" in kind) {
    if (!Array.isArray(value)) return wrong()
    for (let i = 0; i < value.length; i++) {
      // A list holds no null: ProtoJSON has no absent element.
      const problem = value[i] === null
        ? `${path}[${i}] must be ${describe(kind.repeated)}`
        : problemOf(value[i], kind.repeated, `${path}[${i}]`)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  if (!isObject(value)) return wrong()
  return shapeProblem(value, kind, path)
}

const shapeProblem = (value: Record<string, unknown>, shape: Shape, path: string): string | undefined => {
  const prefix = path === "" ? "" : `${path}.`
  let set = 0
  for (const [name, kind] of Object.entries(shape.fields)) {
    const [key, field] = fieldOf(value, name)
    if (field === undefined || field === null) continue
    if (shape.oneOf?.includes(name) === true) set++
    const problem = problemOf(field, kind, `${prefix}${key}`)
    if (problem !== undefined) return problem
  }
  if (shape.oneOf !== undefined && set !== 1) return `${path || "the request"} must have exactly one of ${shape.oneOf.join(", ")}`
  return undefined
}

/**
 * Why the params of the v1.0 method `method` are not of its request's
 * shape, naming the field, or undefined (also for a method this does not
 * know, which the handler refuses itself). `params` must be an object.
 *
 * @internal
 */
export const paramsProblem = (method: string, params: Record<string, unknown>): string | undefined => {
  const shape = methods[method]
  const problem = shape === undefined ? undefined : shapeProblem(params, shape, "")
  return problem === undefined ? undefined : `Invalid params: ${problem}.`
}
