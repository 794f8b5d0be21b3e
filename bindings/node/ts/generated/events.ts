/* eslint-disable */
/**
 * GENERATED FILE, do not edit: the types of every event kind's `data` (docs/EVENTS.md),
 * generated from schema/events.schema.json by bindings/node/scripts/gen-types.mjs
 * (json-schema-to-typescript). Regenerate with `scripts/gen-types` (or
 * `node bindings/node/scripts/gen-types.mjs`) after the schema changes.
 *
 * The unions are closed here, but agents may send values of newer ACP versions at runtime
 * (new `sessionUpdate` kinds, content block types, ...): keep a `default:` branch.
 */

/**
 * Describes an available authentication method.
 *
 * The `type` field acts as the discriminator in the serialized JSON form.
 * When no `type` is present, the method is treated as `agent`.
 */
export type AuthMethod =
  | (AuthMethodTerminal & {
      type: 'terminal';
    })
  | AuthMethodAgent;
/**
 * Typed identifier used for auth method values on the wire.
 */
export type AuthMethodId = string;
/**
 * Why an agent ended.
 */
export type ExitReason = 'exited' | 'shutdown';
/**
 * How a session was opened.
 */
export type SessionOrigin = 'new' | 'load' | 'resume' | 'fork';
/**
 * Unique identifier for a Session Mode.
 */
export type SessionModeId = string;
/**
 * A session configuration option selector and its current state.
 */
export type SessionConfigOption = {
  /**
   * Unique identifier for the configuration option.
   */
  id: SessionConfigId;
  /**
   * Human-readable label for the option.
   */
  name: string;
  /**
   * Optional description for the Client to display to the user.
   */
  description?: string | null;
  /**
   * Optional semantic category for this option (UX only).
   */
  category?: SessionConfigOptionCategory | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
} & SessionConfigOptionVariant;
/**
 * Unique identifier for a session configuration option.
 */
export type SessionConfigId = string;
/**
 * Semantic category for a session configuration option.
 *
 * This is intended to help Clients distinguish broadly common selectors (e.g. model selector vs
 * session mode selector vs thought/reasoning level) for UX purposes (keyboard shortcuts, icons,
 * placement). It MUST NOT be required for correctness. Clients MUST handle missing or unknown
 * categories gracefully.
 *
 * Category names beginning with `_` are free for custom use, like other ACP extension methods.
 * Category names that do not begin with `_` are reserved for the ACP spec.
 */
export type SessionConfigOptionCategory = 'mode' | 'model' | 'model_config' | 'thought_level' | string;
export type SessionConfigOptionVariant =
  | (SessionConfigSelect & {
      type: 'select';
    })
  | (SessionConfigBoolean & {
      type: 'boolean';
    });
/**
 * Unique identifier for a session configuration option value.
 */
export type SessionConfigValueId = string;
/**
 * Possible values for a session configuration option.
 */
export type SessionConfigSelectOptions = SessionConfigSelectOption[] | SessionConfigSelectGroup[];
/**
 * Unique identifier for a session configuration option value group.
 */
export type SessionConfigGroupId = string;
/**
 * Why a session closed.
 */
export type CloseReason = ('closed' | 'deleted' | 'agent_exited' | 'shutdown') | 'archived';
/**
 * Different types of updates that can be sent during session processing.
 *
 * These updates provide real-time feedback about the agent's progress.
 *
 * See protocol docs: [Agent Reports Output](https://agentclientprotocol.com/protocol/v1/prompt-turn#3-agent-reports-output)
 */
export type SessionUpdate =
  | (ContentChunk & {
      sessionUpdate: 'user_message_chunk';
    })
  | (ContentChunk & {
      sessionUpdate: 'agent_message_chunk';
    })
  | (ContentChunk & {
      sessionUpdate: 'agent_thought_chunk';
    })
  | (ToolCall & {
      sessionUpdate: 'tool_call';
    })
  | (ToolCallUpdate & {
      sessionUpdate: 'tool_call_update';
    })
  | (Plan & {
      sessionUpdate: 'plan';
    })
  | (PlanUpdate & {
      sessionUpdate: 'plan_update';
    })
  | (PlanRemoved & {
      sessionUpdate: 'plan_removed';
    })
  | (AvailableCommandsUpdate & {
      sessionUpdate: 'available_commands_update';
    })
  | (CurrentModeUpdate & {
      sessionUpdate: 'current_mode_update';
    })
  | (ConfigOptionUpdate & {
      sessionUpdate: 'config_option_update';
    })
  | (SessionInfoUpdate & {
      sessionUpdate: 'session_info_update';
    })
  | (UsageUpdate & {
      sessionUpdate: 'usage_update';
    })
  | (Notice & {
      sessionUpdate: 'notice';
    })
  | (CompactionUpdate & {
      sessionUpdate: 'compaction_update';
    })
  | (CompactionSummaryChunk & {
      sessionUpdate: 'compaction_summary_chunk';
    })
  | (SubagentUpdate & {
      sessionUpdate: 'subagent_update';
    })
  | (SessionMessage & {
      sessionUpdate: 'session_message';
    })
  | (SessionMessageChunk & {
      sessionUpdate: 'session_message_chunk';
    })
  | (SessionStateUpdate & {
      sessionUpdate: 'state_update';
    })
  | (V2Message & {
      sessionUpdate: 'user_message';
    })
  | (V2Message & {
      sessionUpdate: 'agent_message';
    })
  | (V2Message & {
      sessionUpdate: 'agent_thought';
    })
  | (V2ToolCallContentChunk & {
      sessionUpdate: 'tool_call_content_chunk';
    })
  | (V2TerminalUpdate & {
      sessionUpdate: 'terminal_update';
    })
  | (V2TerminalOutputChunk & {
      sessionUpdate: 'terminal_output_chunk';
    })
  | (V2ReplayComplete & {
      sessionUpdate: 'replay_complete';
    });
/**
 * Content blocks represent displayable information in the Agent Client Protocol.
 *
 * Content blocks appear in:
 * - User prompts sent via `session/prompt`
 * - Language model output streamed through `session/update` notifications
 * - Progress updates and results from tool calls
 *
 * This structure is compatible with the Model Context Protocol (MCP), so agents can
 * forward content from MCP tool outputs without transformation.
 *
 * See protocol docs: [Content](https://agentclientprotocol.com/protocol/v1/content)
 */
export type ContentBlock =
  | (TextContent & {
      type: 'text';
    })
  | (ImageContent & {
      type: 'image';
    })
  | (AudioContent & {
      type: 'audio';
    })
  | (ResourceLink & {
      type: 'resource_link';
    })
  | (EmbeddedResource & {
      type: 'resource';
    });
/**
 * The sender or recipient of messages and data in a conversation.
 */
export type Role = 'assistant' | 'user';
/**
 * Resource content that can be embedded in a message.
 */
export type EmbeddedResourceResource = TextResourceContents | BlobResourceContents;
/**
 * Unique identifier for a message within a session.
 */
export type MessageId = string;
/**
 * Unique identifier for a tool call within a session.
 */
export type ToolCallId = string;
/**
 * Categories of tools that can be invoked.
 *
 * Tool kinds help clients choose appropriate icons and optimize how they
 * display tool execution progress.
 *
 * See protocol docs: [Creating](https://agentclientprotocol.com/protocol/v1/tool-calls#creating)
 */
export type ToolKind =
  'read' | 'edit' | 'delete' | 'move' | 'search' | 'execute' | 'think' | 'fetch' | 'switch_mode' | 'other';
/**
 * Execution status of a tool call.
 *
 * Tool calls progress through different statuses during their lifecycle.
 *
 * See protocol docs: [Status](https://agentclientprotocol.com/protocol/v1/tool-calls#status)
 */
export type ToolCallStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'paused' | 'cancelled';
/**
 * Content produced by a tool call.
 *
 * Tool calls can produce different types of content including
 * standard content blocks (text, images) or file diffs.
 *
 * See protocol docs: [Content](https://agentclientprotocol.com/protocol/v1/tool-calls#content)
 */
export type ToolCallContent =
  | (Content & {
      type: 'content';
    })
  | (Diff & {
      type: 'diff';
    })
  | (Terminal & {
      type: 'terminal';
    })
  | (SessionReference & {
      type: 'session';
    });
/**
 * Typed identifier used for terminal values on the wire.
 */
export type TerminalId = string;
/**
 * A unique identifier for a conversation session between a client and agent.
 *
 * Each session has its own context, conversation history, and state, so one
 * agent can run several independent sessions.
 *
 * See protocol docs: [Session ID](https://agentclientprotocol.com/protocol/v1/session-setup#session-id)
 */
export type SessionId = string;
/**
 * Priority levels for plan entries.
 *
 * Used to indicate the relative importance or urgency of different
 * tasks in the execution plan.
 * See protocol docs: [Plan Entries](https://agentclientprotocol.com/protocol/v1/agent-plan#plan-entries)
 */
export type PlanEntryPriority = 'high' | 'medium' | 'low';
/**
 * Status of a plan entry in the execution flow.
 *
 * Tracks the lifecycle of each task from planning through completion.
 * See protocol docs: [Plan Entries](https://agentclientprotocol.com/protocol/v1/agent-plan#plan-entries)
 */
export type PlanEntryStatus = 'pending' | 'in_progress' | 'completed';
/**
 * Updated content for a plan.
 */
export type PlanUpdateContent =
  | (PlanItems & {
      type: 'items';
    })
  | (PlanMarkdown & {
      type: 'markdown';
    });
/**
 * Unique identifier for a plan within a session.
 */
export type PlanId = string;
/**
 * The input specification for a command.
 */
export type AvailableCommandInput = UnstructuredCommandInput;
/**
 * Severity hint for a session notice.
 */
export type NoticeSeverity = 'info' | 'warning' | 'error' | string;
/**
 * Unique identifier for a context compaction within a session.
 */
export type CompactionId = string;
/**
 * Lifecycle state of a context compaction.
 */
export type CompactionStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled' | string;
/**
 * Current foreground-work state of a reusable child session.
 *
 * Each update is a whole-object snapshot. Idle does not terminate the child.
 * The parent can message it again, transitioning it back to running.
 * Background activity may still emit other session updates while idle.
 */
export type StateUpdate =
  | (RunningStateUpdate & {
      state: 'running';
    })
  | (IdleStateUpdate & {
      state: 'idle';
    })
  | (RequiresActionStateUpdate & {
      state: 'requires_action';
    })
  | (UnknownStateUpdate & {
      state: 'unknown';
    })
  | {
      /**
       * Unrecognized state discriminator.
       */
      state: string;
      [k: string]: unknown;
    };
/**
 * Foreground work is not in progress. The parent can give the child more work.
 *
 * An omitted or `null` `stopReason` means not reported.
 */
export type IdleStateUpdate = {
  /**
   * The _meta property is reserved by ACP for additional metadata.
   * Implementations MUST NOT make assumptions about values at these keys.
   * Optional. Omitted and `null` mean no metadata for this state snapshot.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
  /**
   * Why foreground work stopped. The value selects one of this type's variants, which may add fields of their own.
   *
   * Optional. Omitted or `null` both mean the agent is not reporting a stop reason.
   *
   * See protocol docs: [Work state](https://agentclientprotocol.com/protocol/v1/subagents#work-state)
   */
  stopReason?: string | null;
} & IdleStateUpdateVariant;
export type IdleStateUpdateVariant =
  | {
      stopReason: 'end_turn';
    }
  | {
      stopReason: 'max_tokens';
    }
  | {
      stopReason: 'max_turn_requests';
    }
  | {
      stopReason: 'refusal';
    }
  | {
      stopReason: 'cancelled';
    }
  | (ErrorStopReason & {
      stopReason: 'error';
    })
  | {
      /**
       * Unrecognized stop reason.
       */
      stopReason: string;
      [k: string]: unknown;
    }
  | {
      stopReason?: null;
    };
/**
 * Predefined error codes for common JSON-RPC and ACP-specific errors.
 *
 * Standard errors use the JSON-RPC 2.0 codes. ACP-specific errors use the JSON-RPC
 * server-error range (-32000 to -32099), and request cancellation uses -32800 from the
 * range LSP reserves (-32899 to -32800).
 */
export type ErrorCode = -32700 | -32600 | -32601 | -32602 | -32603 | -32800 | -32000 | -32002 | number;
/**
 * Reasons why an agent stops processing a prompt turn.
 *
 * See protocol docs: [Stop Reasons](https://agentclientprotocol.com/protocol/v1/prompt-turn#stop-reasons)
 */
export type StopReason = 'end_turn' | 'max_tokens' | 'max_turn_requests' | 'refusal' | 'cancelled';
/**
 * Unique identifier for a permission option.
 */
export type PermissionOptionId = string;
/**
 * The type of permission option being presented to the user.
 *
 * Helps clients choose appropriate icons and UI treatment.
 */
export type PermissionOptionKind = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
/**
 * The outcome of a permission request.
 */
export type RequestPermissionOutcome =
  | {
      outcome: 'cancelled';
    }
  | (SelectedPermissionOutcome & {
      outcome: 'selected';
    });
/**
 * Who or what settled a permission or elicitation request.
 */
export type DecidedBy =
  'rule' | 'grant' | 'host' | 'timeout' | 'cancelled' | 'disconnected' | 'invalid_answer' | 'agent_cancelled';
/**
 * What became of one answer.
 */
export type Receipt =
  | {
      status: 'delivered';
    }
  | {
      status: 'rejected';
      state: RequestState;
      code: string;
      message: string;
    }
  | {
      status: 'uncertain';
      code: string;
      message: string;
    };
/**
 * What became of a request when an answer was rejected.
 */
export type RequestState = 'pending' | 'unavailable';
/**
 * The mode of an elicitation.
 */
export type ElicitationMode = 'form' | 'url';
/**
 * Type discriminator for elicitation schemas.
 */
export type ElicitationSchemaType = 'object';
/**
 * Property schema for elicitation form fields.
 *
 * Each variant corresponds to a JSON Schema `"type"` value.
 * Single-select enums use `type: "string"` with `enum` or `oneOf` set.
 * Multi-select enums use `type: "array"`.
 */
export type ElicitationPropertySchema =
  | (StringPropertySchema & {
      type: 'string';
    })
  | (NumberPropertySchema & {
      type: 'number';
    })
  | (IntegerPropertySchema & {
      type: 'integer';
    })
  | (BooleanPropertySchema & {
      type: 'boolean';
    })
  | (MultiSelectPropertySchema & {
      type: 'array';
    })
  | {
      /**
       * Custom or future elicitation property schema type.
       *
       * Values beginning with `_` are reserved for implementation-specific
       * extensions. Unknown values that do not begin with `_` are reserved for
       * future ACP variants.
       */
      type: string;
      [k: string]: unknown;
    };
/**
 * String format types for string properties in elicitation schemas.
 */
export type StringFormat = 'email' | 'uri' | 'date' | 'date-time';
/**
 * Items for a multi-select (array) property schema.
 */
export type MultiSelectItems =
  | (StringMultiSelectItems & {
      type: 'string';
    })
  | {
      /**
       * Custom or future multi-select item type.
       *
       * Values beginning with `_` are reserved for implementation-specific
       * extensions. Unknown values that do not begin with `_` are reserved for
       * future ACP variants.
       */
      type: string;
      [k: string]: unknown;
    }
  | TitledMultiSelectItems;
/**
 * The action an elicitation was answered with (the `action` of ACP's `ElicitationAction`).
 */
export type ElicitationActionKind = 'accept' | 'decline' | 'cancel';
/**
 * Direction of a `wire` event's message.
 */
export type WireDirection = 'in' | 'out';
/**
 * What became of a steer (`Session::steer`).
 */
export type SteerOutcome = 'injected' | 'started_new_turn' | 'queued' | 'prompted' | 'rejected' | 'failed';

/**
 * Every kind's `data` type, one field per kind (the field name is the kind). The generated
 * schema's root: the faces build their event unions from it (`AcpEvent` in Node, the per-kind
 * event classes in Python).
 */
export interface EventData {
  agent_ready: AgentReady;
  agent_exited: AgentExited;
  session_opened: SessionOpened;
  session_closed: SessionClosed;
  session_update: SessionUpdate;
  turn_started: TurnStarted;
  turn_ended: TurnEnded;
  permission_requested: PermissionRequested;
  permission_resolved: PermissionResolved;
  elicitation_requested: ElicitationRequested;
  elicitation_resolved: ElicitationResolved;
  elicitation_completed: ElicitationCompleted;
  fs_read: FsRead;
  fs_write: FsWrite;
  terminal_created: TerminalCreated;
  terminal_exited: TerminalExited;
  agent_stderr: AgentStderr;
  protocol_noise: ProtocolNoise;
  protocol_error: ProtocolError;
  ext_notification: ExtNotification;
  ext_request: ExtRequest;
  wire: Wire;
  call_completed: CallCompleted;
  service_requested: ServiceRequested;
  agent_restarting: AgentRestarting;
  agent_restarted: AgentRestarted;
  agent_failed: AgentFailed;
  session_lost: SessionLost;
  progress: Progress;
  steer: Steer;
}
/**
 * `agent_ready`: the handshake succeeded.
 */
export interface AgentReady {
  protocolVersion: number;
  agentInfo?: Implementation | null;
  agentCapabilities: AgentCapabilities;
  authMethods: AuthMethod[];
  /**
   * The agent's process id; null for non-process transports.
   */
  pid?: number | null;
}
/**
 * Metadata about the implementation of the client or agent.
 * Describes the name and version of an ACP implementation, with an optional
 * title for UI representation.
 */
export interface Implementation {
  /**
   * Intended for programmatic or logical use, but can be used as a display
   * name fallback if title isn't present.
   */
  name: string;
  /**
   * Intended for UI and end-user contexts and optimized to be human-readable
   * and easily understood.
   *
   * If not provided, the name SHOULD be used for display.
   */
  title?: string | null;
  /**
   * Version of the implementation. Can be displayed to the user or used
   * for debugging or metrics purposes. (e.g. "1.0.0").
   */
  version: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities supported by the agent.
 *
 * Advertised during initialization to inform the client about
 * available features and content types.
 *
 * See protocol docs: [Agent Capabilities](https://agentclientprotocol.com/protocol/v1/initialization#agent-capabilities)
 */
export interface AgentCapabilities {
  /**
   * Whether the agent supports `session/load`.
   */
  loadSession?: boolean;
  /**
   * Prompt capabilities supported by the agent.
   */
  promptCapabilities?: PromptCapabilities;
  /**
   * MCP capabilities supported by the agent.
   */
  mcpCapabilities?: McpCapabilities;
  /**
   * Session lifecycle and prompt capabilities advertised by the agent.
   */
  sessionCapabilities?: SessionCapabilities;
  /**
   * Authentication-related capabilities supported by the agent.
   */
  auth?: AgentAuthCapabilities;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Prompt capabilities supported by the agent in `session/prompt` requests.
 *
 * Baseline agent functionality requires support for `text`
 * and `resource_link` content blocks in prompt requests.
 *
 * Other variants must be explicitly opted in to.
 * Capabilities for different types of content in prompt requests.
 *
 * Indicates which content types beyond the baseline (text and resource links)
 * the agent can process.
 *
 * See protocol docs: [Prompt Capabilities](https://agentclientprotocol.com/protocol/v1/initialization#prompt-capabilities)
 */
export interface PromptCapabilities {
  /**
   * Agent supports `image` content blocks.
   */
  image?: boolean;
  /**
   * Agent supports `audio` content blocks.
   */
  audio?: boolean;
  /**
   * Agent supports embedded context in `session/prompt` requests.
   *
   * When enabled, the Client is allowed to include `resource` content blocks
   * in prompt requests for pieces of context that are referenced in the message.
   */
  embeddedContext?: boolean;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * MCP capabilities supported by the agent
 */
export interface McpCapabilities {
  /**
   * Agent supports `http` MCP servers.
   */
  http?: boolean;
  /**
   * Agent supports `sse` MCP servers.
   */
  sse?: boolean;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Session capabilities supported by the agent.
 *
 * As a baseline, all Agents **MUST** support `session/new`, `session/prompt`, `session/cancel`, and `session/update`.
 *
 * Optionally, they **MAY** support other session methods and notifications by specifying additional capabilities.
 *
 * Note: `session/load` is still handled by the top-level `loadSession` capability. This will be unified in future versions of the protocol.
 *
 * See protocol docs: [Session Capabilities](https://agentclientprotocol.com/protocol/v1/initialization#session-capabilities)
 */
export interface SessionCapabilities {
  /**
   * Whether the agent supports `session/list`.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports listing sessions.
   */
  list?: SessionListCapabilities | null;
  /**
   * Whether the agent supports `session/delete`.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports deleting sessions from `session/list`.
   */
  delete?: SessionDeleteCapabilities | null;
  /**
   * Whether the agent supports `additionalDirectories` on supported session lifecycle requests.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports `additionalDirectories` on
   * supported session lifecycle requests.
   *
   * Agents that also support `session/list` may return
   * `SessionInfo.additionalDirectories` to report the complete ordered
   * additional-root list associated with a listed session.
   */
  additionalDirectories?: SessionAdditionalDirectoriesCapabilities | null;
  /**
   * Whether the agent supports `systemPrompt` on session lifecycle requests.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports `systemPrompt` in `append` mode.
   */
  systemPrompt?: SessionSystemPromptCapabilities | null;
  /**
   * Whether the agent supports `session/resume`.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports resuming sessions.
   */
  resume?: SessionResumeCapabilities | null;
  /**
   * Whether the agent supports `session/close`.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports closing sessions.
   */
  close?: SessionCloseCapabilities | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for the `session/list` method.
 *
 * Supplying `{}` means the agent supports listing sessions.
 */
export interface SessionListCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for the `session/delete` method.
 *
 * Supplying `{}` means the agent supports deleting sessions from `session/list`.
 */
export interface SessionDeleteCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for additional session directories support.
 *
 * Supplying `{}` means the agent supports the `additionalDirectories` field on
 * supported session lifecycle requests. Agents that also support
 * `session/list` may return `SessionInfo.additionalDirectories` to report the
 * complete ordered additional-root list associated with a listed session.
 */
export interface SessionAdditionalDirectoriesCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for client-provided system prompts.
 *
 * Supplying `{}` means the agent supports `systemPrompt` on session lifecycle
 * requests in `append` mode.
 */
export interface SessionSystemPromptCapabilities {
  /**
   * Delivery modes the agent supports in addition to `append`.
   *
   * Optional. Omitted or `null` both mean the agent supports only `append`.
   */
  mode?: SessionSystemPromptModeCapabilities | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * System prompt delivery modes the agent supports in addition to `append`.
 *
 * `append` has no entry because every agent advertising
 * `sessionCapabilities.systemPrompt` supports it.
 */
export interface SessionSystemPromptModeCapabilities {
  /**
   * Whether the agent supports `override` mode.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports replacing its built-in default
   * instructions with the client-provided system prompt.
   */
  override?: SessionSystemPromptOverrideCapabilities | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for the `override` system prompt mode.
 *
 * Supplying `{}` means the agent supports replacing its built-in default
 * instructions with the client-provided system prompt.
 */
export interface SessionSystemPromptOverrideCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for the `session/resume` method.
 *
 * Supplying `{}` means the agent supports resuming sessions.
 */
export interface SessionResumeCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capabilities for the `session/close` method.
 *
 * Supplying `{}` means the agent supports closing sessions.
 */
export interface SessionCloseCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Authentication-related capabilities supported by the agent.
 */
export interface AgentAuthCapabilities {
  /**
   * Whether the agent supports the logout method.
   *
   * Optional. Omitted or `null` both mean the agent does not advertise support.
   * Supplying `{}` means the agent supports the logout method.
   */
  logout?: LogoutCapabilities | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Logout capabilities supported by the agent.
 *
 * Supplying `{}` means the agent supports the logout method.
 */
export interface LogoutCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Terminal-based authentication method.
 *
 * The client runs the configured agent program as a separate interactive
 * process for the user to authenticate via a TUI. Agents MUST advertise this
 * method only when the client enabled its terminal authentication capability.
 * A zero exit status signals success. Any other termination signals failure.
 * The client MUST NOT pass this method to `authenticate`.
 */
export interface AuthMethodTerminal {
  /**
   * Unique identifier for this authentication method.
   */
  id: AuthMethodId;
  /**
   * Human-readable name of the authentication method.
   */
  name: string;
  /**
   * Optional human-readable description of this authentication method.
   */
  description?: string | null;
  /**
   * Additional arguments to append to the configured agent invocation for terminal auth.
   */
  args?: string[];
  /**
   * Additional environment variables to set on the configured agent invocation for terminal auth.
   * These values override same-named variables in the base launch configuration.
   */
  env?: {
    [k: string]: string;
  };
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Agent handles authentication itself through `authenticate`.
 *
 * This is the default authentication method type.
 */
export interface AuthMethodAgent {
  /**
   * Unique identifier for this authentication method.
   */
  id: AuthMethodId;
  /**
   * Human-readable name of the authentication method.
   */
  name: string;
  /**
   * Optional human-readable description of this authentication method.
   */
  description?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `agent_exited`: the agent's process is gone. Its last event, unless the agent is supervised
 * (`agent_restarting` or `agent_failed` follows).
 */
export interface AgentExited {
  reason: ExitReason;
  exitCode?: number | null;
  /**
   * The signal that ended it, e.g. `SIGKILL`.
   */
  signal?: string | null;
  stderrTail?: string;
  /**
   * Why a handshake failed (`version_unsupported`, …).
   */
  error?: ErrorInfo | null;
  /**
   * A supervisor acts on this exit (`agent_restarting` or `agent_failed` follows): not the
   * agent's last event. Absent otherwise.
   */
  restart?: boolean;
}
/**
 * An error as every face reports it: `{kind, message, data}` (kinds in docs/ERRORS.md).
 */
export interface ErrorInfo {
  /**
   * The stable error kind, e.g. `agent_exited`, `cancelled`, `agent_error`.
   */
  kind: string;
  message: string;
  data?: unknown;
}
/**
 * `session_opened`.
 */
export interface SessionOpened {
  sessionId: string;
  origin?: SessionOrigin | null;
  cwd?: string | null;
  modes?: SessionModeState | null;
  configOptions?: SessionConfigOption[] | null;
  /**
   * Set when a very long load replay forced the session open before the load response.
   */
  partial?: boolean | null;
}
/**
 * The set of modes and the one currently active.
 */
export interface SessionModeState {
  /**
   * The current mode the Agent is in.
   */
  currentModeId: SessionModeId;
  /**
   * The set of modes that the Agent can operate in
   */
  availableModes: SessionMode[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A mode the agent can operate in.
 *
 * See protocol docs: [Session Modes](https://agentclientprotocol.com/protocol/v1/session-modes)
 */
export interface SessionMode {
  /**
   * Stable identifier used to refer to this protocol object in later messages.
   */
  id: SessionModeId;
  /**
   * Human-readable name shown for this protocol object.
   */
  name: string;
  /**
   * Optional human-readable details shown with this protocol object.
   */
  description?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A single-value selector (dropdown) session configuration option payload.
 */
export interface SessionConfigSelect {
  /**
   * The currently selected value.
   */
  currentValue: SessionConfigValueId;
  /**
   * The set of selectable options.
   */
  options: SessionConfigSelectOptions;
}
/**
 * A possible value for a session configuration option.
 */
export interface SessionConfigSelectOption {
  /**
   * Unique identifier for this option value.
   */
  value: SessionConfigValueId;
  /**
   * Human-readable label for this option value.
   */
  name: string;
  /**
   * Optional description for this option value.
   */
  description?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A group of possible values for a session configuration option.
 */
export interface SessionConfigSelectGroup {
  /**
   * Unique identifier for this group.
   */
  group: SessionConfigGroupId;
  /**
   * Human-readable label for this group.
   */
  name: string;
  /**
   * The set of option values in this group.
   */
  options: SessionConfigSelectOption[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A boolean on/off toggle session configuration option payload.
 */
export interface SessionConfigBoolean {
  /**
   * The current value of the boolean option.
   */
  currentValue: boolean;
}
/**
 * `session_closed`.
 */
export interface SessionClosed {
  sessionId: string;
  reason: CloseReason;
  /**
   * Its agent's process died and the supervisor reopens it under the same id: not the
   * session's last event. Absent otherwise.
   */
  restart?: boolean;
}
/**
 * A streamed item of content
 */
export interface ContentChunk {
  /**
   * A single item of content
   */
  content: ContentBlock;
  /**
   * A unique identifier for the message this chunk belongs to.
   *
   * All chunks belonging to the same message share the same `messageId`.
   * A change in `messageId` indicates a new message has started.
   */
  messageId?: MessageId | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Text provided to or from an LLM.
 */
export interface TextContent {
  /**
   * Optional annotations that help clients decide how to display or route this content.
   */
  annotations?: Annotations | null;
  /**
   * Text payload carried by this content block.
   */
  text: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Optional annotations for the client. The client can use annotations to inform how objects are used or displayed
 */
export interface Annotations {
  /**
   * Intended recipients for this content, such as the user or assistant.
   */
  audience?: Role[] | null;
  /**
   * Timestamp indicating when the underlying resource was last modified.
   */
  lastModified?: string | null;
  /**
   * Relative importance of this content when clients choose what to surface.
   */
  priority?: number | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * An image provided to or from an LLM.
 */
export interface ImageContent {
  /**
   * Optional annotations that help clients decide how to display or route this content.
   */
  annotations?: Annotations | null;
  /**
   * Base64-encoded media payload.
   */
  data: string;
  /**
   * MIME type describing the encoded media payload.
   */
  mimeType: string;
  /**
   * URI associated with this resource or media payload.
   */
  uri?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Audio provided to or from an LLM.
 */
export interface AudioContent {
  /**
   * Optional annotations that help clients decide how to display or route this content.
   */
  annotations?: Annotations | null;
  /**
   * Base64-encoded media payload.
   */
  data: string;
  /**
   * MIME type describing the encoded media payload.
   */
  mimeType: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A resource that the server is capable of reading, included in a prompt or tool call result.
 */
export interface ResourceLink {
  /**
   * Optional annotations that help clients decide how to display or route this content.
   */
  annotations?: Annotations | null;
  /**
   * Optional human-readable details shown with this protocol object.
   */
  description?: string | null;
  /**
   * MIME type describing the encoded media payload.
   */
  mimeType?: string | null;
  /**
   * Human-readable name shown for this protocol object.
   */
  name: string;
  /**
   * Optional size of the linked resource in bytes, if known.
   */
  size?: number | null;
  /**
   * Optional display title for end-user UI.
   */
  title?: string | null;
  /**
   * URI associated with this resource or media payload.
   */
  uri: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * The contents of a resource, embedded into a prompt or tool call result.
 */
export interface EmbeddedResource {
  /**
   * Optional annotations that help clients decide how to display or route this content.
   */
  annotations?: Annotations | null;
  /**
   * Embedded resource payload, either text or binary data.
   */
  resource: EmbeddedResourceResource;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Text-based resource contents.
 */
export interface TextResourceContents {
  /**
   * MIME type describing the encoded media payload.
   */
  mimeType?: string | null;
  /**
   * Text payload carried by this content block.
   */
  text: string;
  /**
   * URI associated with this resource or media payload.
   */
  uri: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Binary resource contents.
 */
export interface BlobResourceContents {
  /**
   * Base64-encoded bytes for a binary resource payload.
   */
  blob: string;
  /**
   * MIME type describing the encoded media payload.
   */
  mimeType?: string | null;
  /**
   * URI associated with this resource or media payload.
   */
  uri: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Represents a tool call that the language model has requested.
 *
 * Tool calls are actions that the agent executes on behalf of the language model,
 * such as reading files, executing code, or fetching data from external sources.
 *
 * See protocol docs: [Tool Calls](https://agentclientprotocol.com/protocol/v1/tool-calls)
 */
export interface ToolCall {
  /**
   * Unique identifier for this tool call within the session.
   */
  toolCallId: ToolCallId;
  /**
   * Human-readable title describing what the tool is doing.
   */
  title: string;
  /**
   * Programmatic name of the tool being invoked.
   *
   * This field is optional. Omitting it or sending `null` both mean that no
   * tool name is available.
   */
  name?: string | null;
  /**
   * The category of tool being invoked.
   * Helps clients choose appropriate icons and UI treatment.
   */
  kind?: ToolKind;
  /**
   * Current execution status of the tool call.
   */
  status?: ToolCallStatus;
  /**
   * Content produced by the tool call.
   */
  content?: ToolCallContent[];
  /**
   * File locations affected by this tool call.
   * Enables "follow-along" features in clients.
   */
  locations?: ToolCallLocation[];
  /**
   * Raw input parameters sent to the tool.
   */
  rawInput?: unknown;
  /**
   * Raw output returned by the tool.
   */
  rawOutput?: unknown;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Standard content block (text, images, resources).
 */
export interface Content {
  /**
   * The actual content block.
   */
  content: ContentBlock;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A diff representing file modifications.
 *
 * Shows changes to files in a format suitable for display in the client UI.
 *
 * See protocol docs: [Content](https://agentclientprotocol.com/protocol/v1/tool-calls#content)
 */
export interface Diff {
  /**
   * The absolute file path being modified.
   */
  path: string;
  /**
   * The original content (omitted or `null` for new files).
   */
  oldText?: string | null;
  /**
   * The new content after modification.
   */
  newText: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Embed a terminal created with `terminal/create` by its id.
 *
 * The terminal MUST be added before calling `terminal/release`.
 *
 * See protocol docs: [Terminal](https://agentclientprotocol.com/protocol/v1/terminals)
 */
export interface Terminal {
  /**
   * Identifier of the terminal instance to embed in the content stream.
   */
  terminalId: TerminalId;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A display-only reference to another session that this tool call operates on,
 * such as a subagent it created, delegated to, or is waiting on.
 *
 * The referenced session must already be known to the Client through ordinary
 * session setup or a `subagent_update` announcement. The reference does not
 * establish ownership, grant any Client-initiated controls, or report that the
 * referenced session received or finished any work.
 */
export interface SessionReference {
  /**
   * The referenced session.
   */
  sessionId: SessionId;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A file location being accessed or modified by a tool.
 *
 * Enables clients to implement "follow-along" features that track
 * which files the agent is working with in real-time.
 *
 * See protocol docs: [Following the Agent](https://agentclientprotocol.com/protocol/v1/tool-calls#following-the-agent)
 */
export interface ToolCallLocation {
  /**
   * The absolute file path being accessed or modified.
   */
  path: string;
  /**
   * Optional 1-based line number within the file.
   */
  line?: number | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * An update to an existing tool call.
 *
 * Used to report progress and results as tools execute. All fields except
 * the tool call ID are optional - only changed fields need to be included.
 *
 * See protocol docs: [Updating](https://agentclientprotocol.com/protocol/v1/tool-calls#updating)
 */
export interface ToolCallUpdate {
  /**
   * The ID of the tool call being updated.
   */
  toolCallId: ToolCallId;
  /**
   * Update the tool kind.
   */
  kind?: ToolKind | null;
  /**
   * Update the execution status.
   */
  status?: ToolCallStatus | null;
  /**
   * Update the human-readable title.
   */
  title?: string | null;
  /**
   * Update the programmatic name of the tool being invoked.
   *
   * This field is optional. Omitting it or sending `null` both mean that
   * the existing name is left unchanged.
   */
  name?: string | null;
  /**
   * Replace the content collection.
   */
  content?: ToolCallContent[] | null;
  /**
   * Replace the locations collection.
   */
  locations?: ToolCallLocation[] | null;
  /**
   * Update the raw input.
   */
  rawInput?: unknown;
  /**
   * Update the raw output.
   */
  rawOutput?: unknown;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
  /**
   * ACP v2 (draft): what the client may do with the call (`cancel`: `tool_call/cancel`), as the agent sent it; `null` clears it.
   */
  capabilities?: unknown;
}
/**
 * A checklist sent with the `plan` session update.
 *
 * See protocol docs: [Agent Plan](https://agentclientprotocol.com/protocol/v1/agent-plan)
 */
export interface Plan {
  /**
   * The list of tasks to be accomplished.
   *
   * The Agent MUST send all entries with their current status.
   * The Client MUST replace the entire checklist with each update.
   */
  entries: PlanEntry[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A single entry in the execution plan.
 *
 * Represents a task or goal that the assistant intends to accomplish
 * as part of fulfilling the user's request.
 * See protocol docs: [Plan Entries](https://agentclientprotocol.com/protocol/v1/agent-plan#plan-entries)
 */
export interface PlanEntry {
  /**
   * Human-readable description of what this task aims to accomplish.
   */
  content: string;
  /**
   * The relative importance of this task.
   * Used to indicate which tasks are most critical to the overall goal.
   */
  priority: PlanEntryPriority;
  /**
   * Current execution status of this task.
   */
  status: PlanEntryStatus;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A content update for a plan identified by ID.
 */
export interface PlanUpdate {
  /**
   * Replaces the whole plan with this `planId`, even if its `type` changes.
   */
  plan: PlanUpdateContent;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A plan represented as structured entries.
 */
export interface PlanItems {
  /**
   * The plan ID to update.
   */
  planId: PlanId;
  /**
   * The list of tasks to be accomplished.
   *
   * The Agent MUST send all entries with their current status.
   * The Client MUST replace the checklist with this `planId` on each update.
   */
  entries: PlanEntry[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A plan represented as Markdown.
 */
export interface PlanMarkdown {
  /**
   * The plan ID to update.
   */
  planId: PlanId;
  /**
   * The complete plan as Markdown, not just the text that changed.
   */
  content: string;
  /**
   * The absolute path of the file that holds this plan.
   *
   * Omitted and `null` both mean the plan has no file. A supplied path MUST
   * be absolute. `content` is the plan to display whether or not `path` is set.
   * Clients can use `path` to open the file.
   */
  path?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Removal notice for a plan identified by ID.
 */
export interface PlanRemoved {
  /**
   * The plan ID to remove. Clients MUST ignore a removal for an unknown ID.
   */
  planId: PlanId;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Available commands are ready or have changed
 */
export interface AvailableCommandsUpdate {
  /**
   * Commands the agent can execute
   */
  availableCommands: AvailableCommand[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Information about a command.
 */
export interface AvailableCommand {
  /**
   * Command name (e.g., `create_plan`, `research_codebase`).
   */
  name: string;
  /**
   * Human-readable description of what the command does.
   */
  description: string;
  /**
   * Input for the command if required
   */
  input?: AvailableCommandInput | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * All text that was typed after the command name is provided as input.
 */
export interface UnstructuredCommandInput {
  /**
   * A hint to display when the input hasn't been provided yet
   */
  hint: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * The current mode of the session has changed
 *
 * See protocol docs: [Session Modes](https://agentclientprotocol.com/protocol/v1/session-modes)
 */
export interface CurrentModeUpdate {
  /**
   * The ID of the current mode
   */
  currentModeId: SessionModeId;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Session configuration options have been updated.
 */
export interface ConfigOptionUpdate {
  /**
   * The full set of configuration options and their current values.
   */
  configOptions: SessionConfigOption[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Update to session metadata. All fields are optional to support partial updates.
 *
 * Agents send this notification to update session information like title or custom metadata.
 * Clients can use it to keep session titles and state current.
 */
export interface SessionInfoUpdate {
  /**
   * Human-readable title for the session. Set to null to clear.
   */
  title?: string | null;
  /**
   * ISO 8601 timestamp of last activity. Set to null to clear.
   */
  updatedAt?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Context window and cost update for a session.
 */
export interface UsageUpdate {
  /**
   * Tokens currently in context.
   */
  used: number;
  /**
   * Total context window size in tokens.
   */
  size: number;
  /**
   * Cumulative session cost (optional).
   */
  cost?: Cost | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Cost information for a session.
 */
export interface Cost {
  /**
   * Total cumulative cost for session.
   */
  amount: number;
  /**
   * Unit of `amount`: an ISO 4217 currency code (e.g., "USD", "EUR") for money, or another
   * unit such as "credits".
   */
  currency: string;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Fire-and-forget information for the user.
 *
 * Notices are live events rather than session history. Agents must not rely on
 * a notice being received, displayed, or seen by the user.
 * Agents MUST only send notices when the Client advertised
 * the `session.notices` Client capability. Otherwise, Agents may use an agent
 * message when the information should still be surfaced to the user.
 *
 * See RFD: [Session Notices](https://agentclientprotocol.com/rfds/session-notices)
 */
export interface Notice {
  /**
   * Presentation severity hint.
   */
  severity: NoticeSeverity;
  /**
   * Required non-empty plain-text title that can stand alone.
   */
  title: string;
  /**
   * Optional plain-text detail or guidance.
   *
   * Omitted and `null` are equivalent and mean no description was supplied.
   */
  description?: string | null;
  /**
   * Metadata scoped to this notice.
   *
   * Omitted and `null` are equivalent and mean no metadata was supplied.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A context compaction upsert. The first notification fixes the compaction's
 * timeline position. Later updates with the same ID patch that entity in place.
 * Agents MUST only send this update when the Client advertised
 * the `session.compaction` Client capability.
 *
 * `summary`, `error`, and `_meta` have patch semantics: omission leaves the
 * stored value unchanged, `null` clears it, and a concrete value replaces it.
 * `summary: []` also clears the summary.
 */
export interface CompactionUpdate {
  /**
   * The Agent-owned ID of this compaction, unique within the session.
   */
  compactionId: CompactionId;
  /**
   * Current lifecycle status.
   */
  status: CompactionStatus;
  /**
   * Complete replacement user-displayable summary content for the compaction.
   */
  summary?: ContentBlock[] | null;
  /**
   * Human-readable error details for the compaction.
   */
  error?: string | null;
  /**
   * Extensible metadata patch for this compaction.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A content block appended to a compaction's summary. A first-seen ID creates
 * an in-progress compaction. Chunks append in receive order.
 * Agents MUST only send this update when the Client advertised
 * the `session.compaction` Client capability.
 */
export interface CompactionSummaryChunk {
  /**
   * ID of the compaction whose summary receives this content.
   */
  compactionId: CompactionId;
  /**
   * One content block to append.
   */
  content: ContentBlock;
  /**
   * Metadata scoped to this chunk. Omission and `null` both mean absent.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Notification that the enclosing parent session created and owns a child session.
 *
 * Later updates modify the existing association's metadata, not its ownership.
 *
 * Sent on the immediate parent session. The first update for an unknown
 * `sessionId` announces the child and MUST be sent
 * before any live child traffic or live message naming the child as sender
 * or recipient. Parents may message and reuse an announced child across
 * multiple operations.
 * Child events are delivered automatically on the same connection. No child
 * load, resume, or subscription is needed.
 *
 * Only the subagent session ID is required. Omitted patch fields keep their
 * previous values. `null` clears them. Clearing capabilities disables child
 * mutations. Clearing state leaves current activity unset/unconfirmed: it does
 * not imply idle, stop work, or create an `unknown` state snapshot. A concrete
 * state replaces the entire previous state object, not the session.
 * The title and description provide the parent's display metadata for the
 * child. They do not replace the content of individual messages or operations.
 * `cwd` and `additionalDirectories` report where the Agent placed the child.
 * While unset, each inherits the immediate parent's effective value.
 */
export interface SubagentUpdate {
  /**
   * The opaque session ID identifying the child in all ACP messages.
   */
  sessionId: SessionId;
  /**
   * The parent's human-readable display title for this child. It need not be unique.
   *
   * Omitted means unchanged. `null` clears it. If unset, the Client chooses
   * a fallback presentation.
   */
  title?: string | null;
  /**
   * The parent's human-readable description of the child's role or purpose.
   *
   * Omitted means unchanged. `null` clears it. If unset, the Client chooses
   * a fallback presentation. This is current display metadata, not the
   * history of instructions sent to the child.
   */
  description?: string | null;
  /**
   * Client-initiated session mutations permitted for this subagent session.
   *
   * Omitted means unchanged. `null` clears the capability set and disables
   * child mutations. If never supplied, no session mutations are permitted.
   * Read-only operations retain their normal protocol semantics and capability
   * requirements. A concrete object replaces the whole capability set.
   */
  capabilities?: SubagentSessionCapabilities | null;
  /**
   * Current state snapshot for the child session.
   *
   * Omitted means unchanged. `null` clears the current activity without
   * asserting idle or sending an `unknown` snapshot. A concrete state
   * replaces the previous state object wholesale. If never supplied, the
   * current activity is unset/unconfirmed.
   */
  state?: StateUpdate | null;
  /**
   * The child's working directory. Must be an absolute path.
   *
   * Optional and nullable. Omitted means unchanged. `null` clears the
   * reported value. While unset, the child inherits its immediate parent's
   * effective working directory. Clients use this value for the child's
   * root set and as the default terminal working directory.
   */
  cwd?: string | null;
  /**
   * Additional workspace roots for the child. Each path MUST be absolute.
   *
   * Optional and nullable. Omitted means unchanged. `null` clears the
   * reported value. While unset, the child inherits its immediate parent's
   * effective additional directories, independently of `cwd`. A concrete
   * array replaces the whole list. `[]` reports no additional directories.
   * Clients use these values for the child's root set.
   */
  additionalDirectories?: string[] | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   * Omitted means unchanged. `null` removes the metadata.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Client-initiated session mutations permitted for a specific subagent session.
 *
 * A mutation requires an explicit per-child capability. Support for the method
 * on ordinary sessions does not grant support on a child.
 */
export interface SubagentSessionCapabilities {
  /**
   * Permits the client to cancel this child's current work without ending
   * the session. Omitted or `null` means unsupported. An object (including
   * `{}`) means supported.
   */
  cancel?: SessionCancelCapabilities | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Capability to cancel work in a subagent session without ending that session.
 *
 * Supplying `{}` advertises support. An omitted or `null` `cancel` does not.
 */
export interface SessionCancelCapabilities {
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Foreground work is in progress.
 */
export interface RunningStateUpdate {
  /**
   * The _meta property is reserved by ACP for additional metadata.
   * Implementations MUST NOT make assumptions about values at these keys.
   * Optional. Omitted and `null` mean no metadata for this state snapshot.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Details of a failure that ended a child's foreground work.
 */
export interface ErrorStopReason {
  /**
   * The failure, as a JSON-RPC error object.
   *
   * Optional. Omitted or `null` both mean the agent is not reporting failure details.
   * Agents SHOULD include it.
   */
  error?: Error | null;
}
/**
 * JSON-RPC error object.
 *
 * Represents an error that occurred during method execution, following the
 * JSON-RPC 2.0 error object specification with optional additional data.
 *
 * See protocol docs: [JSON-RPC Error Object](https://www.jsonrpc.org/specification#error_object)
 */
export interface Error {
  /**
   * A number indicating the error type that occurred.
   * This MUST be an integer as defined in the JSON-RPC specification.
   */
  code: ErrorCode;
  /**
   * A string providing a short description of the error.
   * The message SHOULD be limited to a concise single sentence.
   */
  message: string;
  /**
   * Optional primitive or structured value that contains additional information about the error.
   * This may include debugging information or context-specific details.
   */
  data?: unknown;
}
/**
 * Foreground work is blocked on user action.
 */
export interface RequiresActionStateUpdate {
  /**
   * The _meta property is reserved by ACP for additional metadata.
   * Implementations MUST NOT make assumptions about values at these keys.
   * Optional. Omitted and `null` mean no metadata for this state snapshot.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * The Agent cannot currently determine foreground activity.
 *
 * Report this when activity becomes unobservable, not merely because the child
 * has been quiet. The Client MUST stop presenting the previous state as confirmed
 * current activity, but may retain it as last known. A later state replaces this
 * snapshot normally.
 *
 * This is not a task outcome or session closure. It does not cancel work, resolve
 * pending requests, or revoke capabilities. If a control is no longer available,
 * the Agent updates the capabilities explicitly. Unfinished tool calls and
 * terminals stay as last reported. The Agent does not invent a final status
 * for them, and Clients do not present them as confirmed live activity.
 */
export interface UnknownStateUpdate {
  /**
   * The _meta property is reserved by ACP for additional metadata.
   * Implementations MUST NOT make assumptions about values at these keys.
   * Optional. Omitted and `null` mean no metadata for this state snapshot.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * An upsert for an inter-session message.
 */
export interface SessionMessage {
  /**
   * Identifier of this message within the enclosing session's transcript.
   */
  messageId: MessageId;
  /**
   * The sending session.
   *
   * Omitted leaves the stored value unchanged. `null` clears it. A value replaces it.
   */
  senderSessionId?: SessionId | null;
  /**
   * The receiving session.
   *
   * Omitted leaves the stored value unchanged. `null` clears it. A value replaces it.
   */
  recipientSessionId?: SessionId | null;
  /**
   * On an incoming view, the `messageId` of the same message's outgoing view in the
   * sender's transcript.
   *
   * Omitted leaves the stored value unchanged. `null` clears it. A value replaces it. It can arrive
   * after the message starts streaming.
   */
  senderMessageId?: MessageId | null;
  /**
   * On an outgoing view, the `messageId` of the same message's incoming view in the
   * recipient's transcript.
   *
   * Omitted leaves the stored value unchanged. `null` clears it. A value replaces it. It can arrive
   * after the message starts streaming.
   */
  recipientMessageId?: MessageId | null;
  /**
   * Omitted leaves content unchanged. `null` or `[]` clears it.
   * A non-empty array replaces all content.
   */
  content?: ContentBlock[] | null;
  /**
   * Omitted leaves metadata unchanged. `null` removes it.
   *
   * Implementations MUST NOT make assumptions about values in `_meta`.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A streamed content block of an inter-session message.
 *
 * A chunk carries only content. The message's participants and references come from
 * `session_message` upserts, which can arrive before, between, or after its chunks.
 */
export interface SessionMessageChunk {
  /**
   * Identifier of this message within the enclosing session's transcript.
   */
  messageId: MessageId;
  /**
   * A single content block appended to the message.
   */
  content: ContentBlock;
  /**
   * Optional and nullable chunk-scoped metadata. Omitted or `null` means none.
   *
   * Implementations MUST NOT make assumptions about values in `_meta`.
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * ACP v2 (draft, `unstable: ["protocol/v2"]`): a `session_update` with `sessionUpdate:
 * "state_update"`, the session's foreground state. `idle` ends the turn (docs/EVENTS.md).
 */
export interface SessionStateUpdate {
  /**
   * `running`, `idle`, `requires_action`, `unknown`, or a future state.
   */
  state: string;
  /**
   * Why the work stopped (on `idle`): `end_turn`, `cancelled`, `max_tokens`, `error`, ….
   */
  stopReason?: string | null;
  /**
   * With `stopReason: "error"`: the failure, as a JSON-RPC error object.
   */
  error?: unknown;
  /**
   * Work running independently of the foreground work, as the agent reports it.
   */
  background?: unknown[] | null;
  /**
   * Token usage for the completed work (unstable in ACP, passed through as sent).
   */
  usage?: unknown;
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `user_message`, `agent_message`, `agent_thought`: a message created or patched (a later
 * update with the same `messageId` and kind patches it; chunks append to it).
 */
export interface V2Message {
  /**
   * Unique per message kind within the session.
   */
  messageId: string;
  /**
   * The message's whole content (replaces what the chunks built up).
   */
  content?: ContentBlock[] | null;
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `tool_call_content_chunk`: one content item appended to a tool call's `content`.
 */
export interface V2ToolCallContentChunk {
  toolCallId: string;
  content: ToolCallContent;
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `terminal_update`: an agent-owned terminal created or patched (the agent runs it; the host
 * serves no terminal under v2).
 */
export interface V2TerminalUpdate {
  terminalId: string;
  command?: string | null;
  cwd?: string | null;
  output?: V2TerminalOutput | null;
  /**
   * Set once the process ended.
   */
  exitStatus?: V2TerminalExitStatus | null;
  size?: V2TerminalSize | null;
  /**
   * What the client may do with the terminal (e.g. `cancel`), as the agent sent it.
   */
  capabilities?: unknown;
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * An agent-owned terminal's output snapshot (replaces what the chunks built up).
 */
export interface V2TerminalOutput {
  /**
   * The output bytes, base64.
   */
  data: string;
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * How an agent-owned terminal's process ended.
 */
export interface V2TerminalExitStatus {
  exitCode?: number | null;
  /**
   * The signal that ended it, e.g. `SIGTERM`.
   */
  signal?: string | null;
}
/**
 * An agent-owned terminal's size in character cells.
 */
export interface V2TerminalSize {
  cols: number;
  rows: number;
}
/**
 * `terminal_output_chunk`: bytes appended to an agent-owned terminal's output.
 */
export interface V2TerminalOutputChunk {
  terminalId: string;
  /**
   * The bytes, base64 (each chunk encoded on its own).
   */
  data: string;
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `replay_complete`: the history replay a `session/resume` asked for is over; later updates
 * are live.
 */
export interface V2ReplayComplete {
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `turn_started`: the prompt as sent.
 */
export interface TurnStarted {
  prompt: ContentBlock[];
  /**
   * `agent`: ACP v2 work the agent started by itself (no prompt; `prompt` is empty). Absent
   * for a prompt's turn.
   */
  origin?: string | null;
}
/**
 * `turn_ended`: the `session/prompt` result (`stopReason`, `usage`, `_meta` as the agent sent
 * them), or `stopReason: null` with the `error` that ended the turn.
 */
export interface TurnEnded {
  stopReason?: StopReason | null;
  error?: ErrorInfo | null;
  /**
   * Token usage, when the agent reports it (unstable in ACP, passed through as sent).
   */
  usage?: unknown;
  _meta?: {
    [k: string]: unknown;
  } | null;
  /**
   * ACP v2: the `messageId` with which the agent accepted the prompt (absent for v1 and for
   * an agent-initiated turn).
   */
  messageId?: string | null;
  /**
   * ACP v2: the `state_update` to `idle` that ended the turn, as the agent sent it.
   */
  state?: unknown;
}
/**
 * `permission_requested`.
 */
export interface PermissionRequested {
  /**
   * The host's id: answer with `respond_permission(requestId, optionId | null)`.
   */
  requestId: number;
  sessionId: string;
  /**
   * The request's `toolCall` merged over the tool call the session already knows.
   */
  toolCall: ToolCallUpdate;
  options: PermissionOption[];
}
/**
 * An option presented to the user when requesting permission.
 */
export interface PermissionOption {
  /**
   * Unique identifier for this permission option.
   */
  optionId: PermissionOptionId;
  /**
   * Human-readable label to display to the user.
   */
  name: string;
  /**
   * Hint about the nature of this permission option.
   */
  kind: PermissionOptionKind;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `permission_resolved`: exactly one per `permission_requested`.
 */
export interface PermissionResolved {
  requestId: number;
  sessionId: string;
  /**
   * What the agent was answered; null when nothing could be sent.
   */
  outcome?: RequestPermissionOutcome | null;
  optionKind?: PermissionOptionKind | null;
  decidedBy: DecidedBy;
  /**
   * The rule or grant that decided, when one did.
   */
  rule?: string | null;
  /**
   * Why the host's answer was not used (`decidedBy: "invalid_answer"`): the handler's error
   * (its message and stack, as the face reports it) or the unusable answer.
   */
  reason?: string | null;
  /**
   * Whether the answer sent reached the agent (absent when no answer was sent:
   * `disconnected`, `agent_cancelled`).
   */
  receipt?: Receipt | null;
}
/**
 * The user selected one of the provided options.
 */
export interface SelectedPermissionOutcome {
  /**
   * The ID of the option the user selected.
   */
  optionId: PermissionOptionId;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `elicitation_requested`.
 */
export interface ElicitationRequested {
  /**
   * The host's id: answer with `respond_elicitation(requestId, …)`.
   */
  requestId: number;
  agent: number;
  sessionId?: string | null;
  toolCallId?: string | null;
  /**
   * The id of the host's request in flight this elicitation belongs to (request scope).
   */
  scopeRequestId?: unknown;
  /**
   * False when `scopeRequestId` names none of the host's requests in flight (the agent chose
   * the id); true otherwise (session scope, or a request of the host's in flight).
   */
  scopeKnown: boolean;
  turn?: number | null;
  message: string;
  mode: ElicitationMode;
  /**
   * `form` mode: the JSON schema of the requested fields.
   */
  requestedSchema?: ElicitationSchema | null;
  /**
   * `url` mode.
   */
  elicitationId?: string | null;
  /**
   * `url` mode: shown to the user in full, never opened by the host.
   */
  url?: string | null;
}
/**
 * Type-safe elicitation schema for requesting structured user input.
 *
 * This represents a JSON Schema object with primitive-typed properties,
 * as required by the elicitation specification.
 */
export interface ElicitationSchema {
  /**
   * Type discriminator. Always `"object"`.
   */
  type?: ElicitationSchemaType;
  /**
   * Optional title for the schema.
   *
   * Optional. Omitted and `null` are equivalent and mean no title is provided.
   */
  title?: string | null;
  /**
   * Property definitions (MUST be primitive types).
   */
  properties?: {
    [k: string]: ElicitationPropertySchema;
  };
  /**
   * List of required property names.
   *
   * Optional. Omitted and `null` are equivalent and mean no property names are required.
   */
  required?: string[] | null;
  /**
   * Optional description of what this schema represents.
   *
   * Optional. Omitted and `null` are equivalent and mean no schema description is provided.
   */
  description?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Schema for string properties in an elicitation form.
 *
 * When `enum` or `oneOf` is set, this represents a single-select enum
 * with `"type": "string"`.
 */
export interface StringPropertySchema {
  /**
   * Optional title for the property.
   *
   * Optional. Omitted and `null` are equivalent and mean no title is provided.
   */
  title?: string | null;
  /**
   * Human-readable description.
   *
   * Optional. Omitted and `null` are equivalent and mean no description is provided.
   */
  description?: string | null;
  /**
   * Minimum string length.
   *
   * Optional. Omitted and `null` are equivalent and mean there is no minimum length constraint.
   */
  minLength?: number | null;
  /**
   * Maximum string length.
   *
   * Optional. Omitted and `null` are equivalent and mean there is no maximum length constraint.
   */
  maxLength?: number | null;
  /**
   * Pattern the string must match.
   *
   * Optional. Omitted and `null` are equivalent and mean there is no pattern constraint.
   */
  pattern?: string | null;
  /**
   * String format.
   *
   * Optional. Omitted and `null` are equivalent and mean there is no format constraint.
   */
  format?: StringFormat | null;
  /**
   * Default value.
   *
   * Optional. Omitted and `null` are equivalent and mean no default value is provided.
   */
  default?: string | null;
  /**
   * Enum values for untitled single-select enums.
   * Optional. Omitted and `null` are equivalent and mean no untitled single-select choices are
   * declared by `enum`.
   */
  enum?: string[] | null;
  /**
   * Titled enum options for titled single-select enums.
   * Optional. Omitted and `null` are equivalent and mean no titled single-select choices are
   * declared by `oneOf`.
   */
  oneOf?: EnumOption[] | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * A titled enum option with a const value, human-readable title, and optional description.
 */
export interface EnumOption {
  /**
   * The constant value for this option.
   */
  const: string;
  /**
   * Human-readable title for this option.
   */
  title: string;
  /**
   * Human-readable description.
   *
   * Optional. Omitted and `null` are equivalent and mean no description is provided.
   */
  description?: string | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Schema for number (floating-point) properties in an elicitation form.
 */
export interface NumberPropertySchema {
  /**
   * Optional title for the property.
   *
   * Optional. Omitted and `null` are equivalent and mean no title is provided.
   */
  title?: string | null;
  /**
   * Human-readable description.
   *
   * Optional. Omitted and `null` are equivalent and mean no description is provided.
   */
  description?: string | null;
  /**
   * Minimum value (inclusive).
   *
   * Optional. Omitted and `null` are equivalent and mean there is no inclusive lower bound.
   */
  minimum?: number | null;
  /**
   * Maximum value (inclusive).
   *
   * Optional. Omitted and `null` are equivalent and mean there is no inclusive upper bound.
   */
  maximum?: number | null;
  /**
   * Default value.
   *
   * Optional. Omitted and `null` are equivalent and mean no default value is provided.
   */
  default?: number | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Schema for integer properties in an elicitation form.
 */
export interface IntegerPropertySchema {
  /**
   * Optional title for the property.
   *
   * Optional. Omitted and `null` are equivalent and mean no title is provided.
   */
  title?: string | null;
  /**
   * Human-readable description.
   *
   * Optional. Omitted and `null` are equivalent and mean no description is provided.
   */
  description?: string | null;
  /**
   * Minimum value (inclusive).
   *
   * Optional. Omitted and `null` are equivalent and mean there is no inclusive lower bound.
   */
  minimum?: number | null;
  /**
   * Maximum value (inclusive).
   *
   * Optional. Omitted and `null` are equivalent and mean there is no inclusive upper bound.
   */
  maximum?: number | null;
  /**
   * Default value.
   *
   * Optional. Omitted and `null` are equivalent and mean no default value is provided.
   */
  default?: number | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Schema for boolean properties in an elicitation form.
 */
export interface BooleanPropertySchema {
  /**
   * Optional title for the property.
   *
   * Optional. Omitted and `null` are equivalent and mean no title is provided.
   */
  title?: string | null;
  /**
   * Human-readable description.
   *
   * Optional. Omitted and `null` are equivalent and mean no description is provided.
   */
  description?: string | null;
  /**
   * Default value.
   *
   * Optional. Omitted and `null` are equivalent and mean no default value is provided.
   */
  default?: boolean | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Schema for multi-select (array) properties in an elicitation form.
 */
export interface MultiSelectPropertySchema {
  /**
   * Optional title for the property.
   *
   * Optional. Omitted and `null` are equivalent and mean no title is provided.
   */
  title?: string | null;
  /**
   * Human-readable description.
   *
   * Optional. Omitted and `null` are equivalent and mean no description is provided.
   */
  description?: string | null;
  /**
   * Minimum number of items to select.
   *
   * Optional. Omitted and `null` are equivalent and mean there is no minimum selection count.
   */
  minItems?: number | null;
  /**
   * Maximum number of items to select.
   *
   * Optional. Omitted and `null` are equivalent and mean there is no maximum selection count.
   */
  maxItems?: number | null;
  /**
   * The items definition describing allowed values.
   */
  items: MultiSelectItems;
  /**
   * Default selected values.
   *
   * Optional. Omitted and `null` are equivalent and mean no default selections are provided.
   */
  default?: string[] | null;
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * String item schema for multi-select enum properties.
 */
export interface StringMultiSelectItems {
  /**
   * Allowed enum values.
   */
  enum: string[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * Items definition for titled multi-select enum properties.
 */
export interface TitledMultiSelectItems {
  /**
   * Titled enum options.
   */
  anyOf: EnumOption[];
  /**
   * The _meta property is reserved by ACP to allow clients and agents to attach additional
   * metadata to their interactions. Implementations MUST NOT make assumptions about values at
   * these keys.
   *
   * Optional. Omitted and `null` are equivalent and mean no metadata.
   *
   * See protocol docs: [Extensibility](https://agentclientprotocol.com/protocol/v1/extensibility)
   */
  _meta?: {
    [k: string]: unknown;
  } | null;
}
/**
 * `elicitation_resolved`: exactly one per `elicitation_requested`.
 */
export interface ElicitationResolved {
  requestId: number;
  sessionId?: string | null;
  /**
   * Null when nothing could be sent (`disconnected`, `agent_cancelled`).
   */
  action?: ElicitationActionKind | null;
  decidedBy: DecidedBy;
  /**
   * Accepted forms: the names of the fields sent (their values are not copied here).
   */
  fields?: string[] | null;
  /**
   * Why an answer was invalid.
   */
  reason?: string | null;
  /**
   * Whether the answer sent reached the agent (absent when no answer was sent).
   */
  receipt?: Receipt | null;
}
/**
 * `elicitation_completed`.
 */
export interface ElicitationCompleted {
  elicitationId: string;
}
/**
 * `fs_read`.
 */
export interface FsRead {
  path: string;
  line?: number | null;
  limit?: number | null;
  outcome: string;
  /**
   * `ok`: the size of the text served.
   */
  bytes?: number | null;
  /**
   * `denied`: the policy rule.
   */
  rule?: string | null;
  /**
   * Failures: a message.
   */
  error?: string | null;
  /**
   * Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
   */
  receipt?: Receipt | null;
}
/**
 * `fs_write`.
 */
export interface FsWrite {
  path: string;
  /**
   * The content's size.
   */
  bytes?: number | null;
  outcome: string;
  rule?: string | null;
  error?: string | null;
  /**
   * Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
   */
  receipt?: Receipt | null;
}
/**
 * `terminal_created`.
 */
export interface TerminalCreated {
  command: string;
  args?: string[];
  cwd?: string | null;
  outcome: string;
  /**
   * `ok` only.
   */
  terminalId?: string | null;
  rule?: string | null;
  error?: string | null;
  /**
   * Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
   */
  receipt?: Receipt | null;
}
/**
 * `terminal_exited`.
 */
export interface TerminalExited {
  terminalId: string;
  exitCode?: number | null;
  signal?: string | null;
}
/**
 * `agent_stderr`: one line of the agent's stderr (lossy UTF-8).
 */
export interface AgentStderr {
  line: string;
  /**
   * A line over 64 KiB is reported empty, with its size here.
   */
  omittedBytes?: number | null;
}
/**
 * `protocol_noise`: a non-JSON line on the agent's stdout, skipped.
 */
export interface ProtocolNoise {
  /**
   * Its first 1 KiB.
   */
  line: string;
  bytes: number;
  /**
   * Noise lines so far from this agent.
   */
  count: number;
}
/**
 * `protocol_error`: something the agent sent broke the protocol; ignored or repaired.
 * Further fields depend on `reason` (`id`, `bytes`, `limit`, `method`, `result`, `error`, …).
 */
export interface ProtocolError {
  /**
   * `line_too_long`, `invalid_utf8`, `unknown_response_id`, `duplicate_response`,
   * `invalid_message`, `invalid_params`, `duplicate_request_id`, `stdin_stalled`,
   * `late_response`, …
   */
  reason: string;
  message: string;
  id?: unknown;
  method?: string | null;
}
/**
 * `ext_notification`: a notification the host does not handle.
 */
export interface ExtNotification {
  method: string;
  params?: unknown;
}
/**
 * `ext_request`: an extension request the embedder's handler served.
 */
export interface ExtRequest {
  method: string;
  /**
   * `ok`, `error` or `cancelled`.
   */
  outcome: string;
  error?: RpcErrorInfo | null;
  /**
   * Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
   */
  receipt?: Receipt | null;
}
/**
 * A JSON-RPC error object as the agent was answered.
 */
export interface RpcErrorInfo {
  code: number;
  message: string;
}
/**
 * `wire` (opt-in): every JSON-RPC message in or out.
 */
export interface Wire {
  direction: WireDirection;
  message: unknown;
}
/**
 * `call_completed` (C ABI only): the outcome of an asynchronous call.
 */
export interface CallCompleted {
  call: number;
  ok: boolean;
  result?: unknown;
  error?: ErrorInfo | null;
}
/**
 * `service_requested` (C ABI only, with `"services": "events"`): an agent's fs/terminal/extension
 * request or a terminal login for the embedder, answered by `requestId`
 * (`acph_service_respond` / `acph_service_fail`).
 */
export interface ServiceRequested {
  requestId: number;
  /**
   * `fs/read_text_file`, `fs/write_text_file`, `terminal/*`, a `_` extension method, or
   * `acph/terminal_auth`.
   */
  method: string;
  /**
   * The request's params (for fs: `{"sessionId", "path", ...}` after the host's checks).
   */
  params: unknown;
}
/**
 * `agent_restarting`: a supervised agent's process ended (or the previous restart attempt
 * failed); attempt `attempt` of `maxRestarts` starts after `delayMs`.
 */
export interface AgentRestarting {
  attempt: number;
  maxRestarts: number;
  delayMs: number;
  /**
   * Why: `agent_exited` with the dead process's status, or the failed attempt's error.
   */
  error: ErrorInfo;
}
/**
 * `agent_restarted`: the new process is the agent's connection; the embedder's handles reach
 * it. Follows the new process's `agent_ready` and the reopened sessions' `session_opened`.
 */
export interface AgentRestarted {
  attempt: number;
  pid?: number | null;
  recovered: RecoveredSession[];
  /**
   * Session ids that could not be reopened (each also has a `session_lost` event).
   */
  lost: string[];
}
/**
 * How a session came back after a restart.
 */
export interface RecoveredSession {
  sessionId: string;
  /**
   * `resume` or `load` (a load replays the conversation as `replay: true` updates).
   */
  via: string;
}
/**
 * `agent_failed`: the supervisor gave up after `attempts` restarts; the agent stays down.
 * Always the agent's last event.
 */
export interface AgentFailed {
  attempts: number;
  /**
   * Why the last attempt (or, with `maxRestarts: 0`, the process) failed.
   */
  error: ErrorInfo;
}
/**
 * `session_lost`: a session of a restarted agent that could not be reopened (the agent offers
 * neither resume nor load, or refused); its handle no longer reaches a session.
 */
export interface SessionLost {
  sessionId: string;
  error: ErrorInfo;
}
/**
 * `progress`: a slow step of the host's (`phase`: `spawn`, `handshake`, `login`) started, is
 * still waiting (every 5 s), is done or failed. The agent has no session yet during these.
 */
export interface Progress {
  /**
   * `spawn`, `handshake`, `login` (registry installs report `download` and `extract` to their
   * own callback).
   */
  phase: string;
  /**
   * `started`, `waiting`, `done`, `failed`.
   */
  stage: string;
  /**
   * Since the step started.
   */
  elapsedMs: number;
  bytes?: number | null;
  /**
   * What failed, or what is being waited for.
   */
  message?: string | null;
}
/**
 * `steer`: one step of a steer's life. `prompt` is the steer's content on every outcome but
 * `prompted` (its `turn_started` carries it).
 */
export interface Steer {
  /**
   * The host's id for the steer (per host, increasing; `SteerResult::steer`).
   */
  steer: number;
  outcome: SteerOutcome;
  prompt?: ContentBlock[] | null;
  /**
   * Why it was rejected, or the agent's `reason` for `promptRequired`/`failed`.
   */
  reason?: string | null;
  /**
   * Why it failed (`failed` only).
   */
  error?: ErrorInfo | null;
}
