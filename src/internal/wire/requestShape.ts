/**
 * The shape of an A2A request, checked before the SDK reads it. The SDK's
 * v1.0 codecs coerce: a number where a string belongs becomes its text
 * (`messageId: 5` is "5"), an object becomes "[object Object]", anything
 * truthy is `true`, and a `null` in a list throws a TypeError that surfaces
 * as an internal error. Its v0.3 translation takes what it is given as it
 * is, so that the same wrong types, or a missing id, reach the handler. One
 * check for the JSON transports (JSON-RPC v1.0 and v0.3, HTTP+JSON), so
 * that a wrong type is refused as invalid params naming the field, the
 * same on each.
 *
 * v1.0, as ProtoJSON reads it: a `null` field is an absent one; a 32-bit
 * integer may be a JSON number or a decimal string; an enum its name or its
 * number; `bytes` a base64 string; unknown fields are let through, as the
 * SDK lets them through. A part holds exactly one of its contents.
 *
 * v0.3, as its JSON schema says and its clients send it: camelCase names
 * only, an integer a JSON number, a part told by its `kind`, and the fields
 * the translation reads without a default required. A `null` is still an
 * absent field, as the translation reads it.
 *
 * @internal
 */

type Kind =
  | "string"
  | "bool"
  | "int"
  | "integer"
  | "bytes"
  | "struct"
  | "value"
  | { readonly enum: ReadonlyArray<string> }
  | { readonly repeated: Kind }
  /** An object whose shape its `tag` field names. */
  | { readonly tag: string; readonly cases: Readonly<Record<string, Shape>> }
  | Shape

interface Shape {
  readonly fields: Readonly<Record<string, Kind>>
  /** Exactly one of these fields is set. */
  readonly oneOf?: ReadonlyArray<string>
  /** These fields are set. */
  readonly required?: ReadonlyArray<string>
}

/** The params of each method, by its JSON-RPC name. */
interface Table {
  readonly methods: Readonly<Record<string, Shape>>
  /** Whether a field may also go by its proto (snake_case) name, as ProtoJSON reads it. */
  readonly protoNames: boolean
}

const part: Shape = {
  fields: {
    text: "string",
    raw: "bytes",
    url: "string",
    data: "value",
    metadata: "struct",
    filename: "string",
    mediaType: "string"
  },
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

const v1: Table = {
  protoNames: true,
  methods: {
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
    ListTaskPushNotificationConfigs: {
      fields: { tenant: "string", taskId: "string", pageSize: "int", pageToken: "string" }
    },
    GetExtendedAgentCard: { fields: { tenant: "string" } }
  }
}

// v0.3's shapes (the `a2a.json` schema of v0.3.0), as its JSON-RPC methods take them.
const legacyPushConfig: Shape = {
  fields: {
    id: "string",
    url: "string",
    token: "string",
    // Its `schemes` are required by the schema, but the translation reads none as none: a client may leave them out.
    authentication: { fields: { schemes: { repeated: "string" }, credentials: "string" } }
  },
  required: ["url"]
}

const legacyMetadata = { metadata: "struct" } as const

const legacyPart: Kind = {
  tag: "kind",
  cases: {
    text: { fields: { text: "string", ...legacyMetadata }, required: ["text"] },
    file: {
      fields: {
        file: {
          fields: { bytes: "bytes", uri: "string", mimeType: "string", name: "string" },
          oneOf: ["bytes", "uri"]
        },
        ...legacyMetadata
      },
      required: ["file"]
    },
    data: { fields: { data: "struct", ...legacyMetadata }, required: ["data"] }
  }
}

const legacySend: Shape = {
  fields: {
    message: {
      fields: {
        messageId: "string",
        contextId: "string",
        taskId: "string",
        role: { enum: ["user", "agent"] },
        parts: { repeated: legacyPart },
        ...legacyMetadata,
        extensions: { repeated: "string" },
        referenceTaskIds: { repeated: "string" }
      },
      required: ["messageId", "role", "parts"]
    },
    configuration: {
      fields: {
        acceptedOutputModes: { repeated: "string" },
        pushNotificationConfig: legacyPushConfig,
        historyLength: "integer",
        blocking: "bool"
      }
    },
    ...legacyMetadata
  },
  required: ["message"]
}

const legacyTaskId: Shape = { fields: { id: "string", ...legacyMetadata }, required: ["id"] }

const v03: Table = {
  protoNames: false,
  methods: {
    "message/send": legacySend,
    "message/stream": legacySend,
    "tasks/get": { fields: { ...legacyTaskId.fields, historyLength: "integer" }, required: ["id"] },
    "tasks/cancel": legacyTaskId,
    "tasks/resubscribe": legacyTaskId,
    "tasks/pushNotificationConfig/set": {
      fields: { taskId: "string", pushNotificationConfig: legacyPushConfig },
      required: ["taskId", "pushNotificationConfig"]
    },
    "tasks/pushNotificationConfig/get": {
      fields: { ...legacyTaskId.fields, pushNotificationConfigId: "string" },
      required: ["id"]
    },
    "tasks/pushNotificationConfig/list": legacyTaskId,
    "tasks/pushNotificationConfig/delete": {
      fields: { ...legacyTaskId.fields, pushNotificationConfigId: "string" },
      required: ["id", "pushNotificationConfigId"]
    }
  }
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
      case "integer":
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

// The field as `table`'s reader reads it: its camelCase name, else (ProtoJSON) its proto (snake_case) name.
const fieldOf = (table: Table, object: Record<string, unknown>, name: string): [string, unknown] => {
  if (!table.protoNames || (object[name] !== undefined && object[name] !== null)) return [name, object[name]]
  const snake = name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)
  return [snake, object[snake]]
}

/** Where `value` is not of `kind`, and what was expected, or undefined. `path` names `value`. */
const problemOf = (table: Table, value: unknown, kind: Kind, path: string): string | undefined => {
  const wrong = () => `${path} must be ${describe(kind)}`
  if (typeof kind === "string") {
    switch (kind) {
      case "string":
        return typeof value === "string" ? undefined : wrong()
      case "bool":
        return typeof value === "boolean" ? undefined : wrong()
      case "int":
        return isInt32(value) ? undefined : wrong()
      case "integer":
        return typeof value === "number" && isInt32(value) ? undefined : wrong()
      case "bytes":
        return typeof value === "string" && base64.test(value) ? undefined : wrong()
      case "struct":
        return isObject(value) ? undefined : wrong()
      case "value":
        return undefined
    }
  }
  if ("enum" in kind) {
    // ProtoJSON also takes an enum by its number.
    return (typeof value === "string" && kind.enum.includes(value)) ||
        (table.protoNames && Number.isInteger(value) && isInt32(value))
      ? undefined
      : wrong()
  }
  if ("repeated" in kind) {
    if (!Array.isArray(value)) return wrong()
    for (let i = 0; i < value.length; i++) {
      // A list holds no null: ProtoJSON has no absent element.
      const problem = value[i] === null
        ? `${path}[${i}] must be ${describe(kind.repeated)}`
        : problemOf(table, value[i], kind.repeated, `${path}[${i}]`)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  if (!isObject(value)) return wrong()
  if ("tag" in kind) {
    const tag = value[kind.tag]
    const names = Object.keys(kind.cases)
    const shape = typeof tag === "string" && Object.hasOwn(kind.cases, tag) ? kind.cases[tag] : undefined
    return shape !== undefined
      ? shapeProblem(table, value, shape, path)
      : `${path}.${kind.tag} must be one of ${names.join(", ")}`
  }
  return shapeProblem(table, value, kind, path)
}

const shapeProblem = (table: Table, value: Record<string, unknown>, shape: Shape, path: string): string | undefined => {
  const prefix = path === "" ? "" : `${path}.`
  let set = 0
  for (const [name, kind] of Object.entries(shape.fields)) {
    const [key, field] = fieldOf(table, value, name)
    if (field === undefined || field === null) {
      if (shape.required?.includes(name) === true) return `${prefix}${name} is required`
      continue
    }
    if (shape.oneOf?.includes(name) === true) set++
    const problem = problemOf(table, field, kind, `${prefix}${key}`)
    if (problem !== undefined) return problem
  }
  if (shape.oneOf !== undefined && set !== 1) {
    return `${path || "the request"} must have exactly one of ${shape.oneOf.join(", ")}`
  }
  return undefined
}

const problemIn = (table: Table, method: string, params: Record<string, unknown>): string | undefined => {
  const shape = table.methods[method]
  const problem = shape === undefined ? undefined : shapeProblem(table, params, shape, "")
  return problem === undefined ? undefined : `Invalid params: ${problem}.`
}

/**
 * Why the params of the v1.0 method `method` are not of its request's
 * shape, naming the field, or undefined (also for a method this does not
 * know, which the handler refuses itself). `params` must be an object.
 *
 * @internal
 */
export const paramsProblem = (method: string, params: Record<string, unknown>): string | undefined =>
  problemIn(v1, method, params)

/**
 * As {@link paramsProblem}, for the v0.3 JSON-RPC method `method`
 * (`message/send`, `tasks/get`...).
 *
 * @internal
 */
export const legacyParamsProblem = (method: string, params: Record<string, unknown>): string | undefined =>
  problemIn(v03, method, params)
