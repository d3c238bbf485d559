// Names for the wire shapes generated from spec/driver-openapi.json (npm run generate); none written by hand.

import type { components } from "./generated/driver.js";

type Schemas = components["schemas"];

export type ApprovalAnswer = Schemas["ApprovalAnswer"];
export type ArtifactRef = Schemas["ArtifactRef"];
export type ArtifactUpload = Schemas["ArtifactUpload"];
export type ContextMember = Schemas["ContextMember"];
export type CrashPoint = Schemas["CrashPoint"];
export type Disposition = Schemas["Disposition"];
export type Envelope = Schemas["Envelope"];
export type Event = Schemas["Event"];
export type ExecuteTool = Schemas["ExecuteTool"];
export type IdempotencyClass = Schemas["IdempotencyClass"];
export type Identity = Schemas["Identity"];
export type InstanceConfig = Schemas["InstanceConfig"];
export type InvocationRow = Schemas["InvocationRow"];
export type InvocationStatus = Schemas["InvocationStatus"];
export type OpenInstance = Schemas["OpenInstance"];
export type Outcome = Schemas["Outcome"];
export type Problem = Schemas["Problem"];
export type ProposedCall = Schemas["ProposedCall"];
export type ReasonCode = Schemas["ReasonCode"];
export type ResumeAnswer = Schemas["ResumeAnswer"];
export type ScopeQuery = Schemas["ScopeQuery"];
export type StepRequest = Schemas["StepRequest"];
export type Success = Schemas["Success"];
export type Suspended = Schemas["Suspended"];
export type ToolCancellation = Schemas["ToolCancellation"];
export type ToolOutcome = Schemas["ToolOutcome"];
export type ToolResult = Schemas["ToolResult"];
export type ToolSpec = Schemas["ToolSpec"];
export type TrustLabel = Schemas["TrustLabel"];
export type FailureKind = NonNullable<Schemas["ToolFailure"]["kind"]>;
