/**
 * Type-level contract of generated child-workflow code (the parent-child
 * example's specs), checked by `npm run typecheck`: correct use compiles,
 * and every line after a `@ts-expect-error` is misuse that must not compile.
 */

import type { batches, documents } from "../../../examples/parent-child/generated/index.js";

declare const fanOutCtx: batches.BatchRenderFanOutContext;
declare const joinCtx: batches.BatchRenderJoinContext;
declare const renderCtx: documents.DocumentRenderRenderContext;

const pending: batches.BatchRenderJoinPayload = { batch_id: "b", pending: [], pages: 0, rendered: [], failed: [] };

export async function correct(): Promise<batches.BatchRenderFanOutTransition> {
  const child = await fanOutCtx.workflows.documents.documentRender.start({ document: "a.md" }, { key: "a", parentClose: "abandon" });
  const id: string = child.runId;
  const end = joinCtx.signal;
  if (end.status === "succeeded") {
    const pages: number = end.result.pages;
    void pages;
  } else if (end.status === "failed") {
    const reason: string | undefined = end.error?.reason;
    void reason;
  }
  void joinCtx.workflows.documents.documentRender.child(id).onComplete(joinCtx.next.join, pending);
  return child.onComplete(fanOutCtx.next.join, pending);
}

export async function misuse(): Promise<void> {
  // @ts-expect-error: the child's input has no field "doc"
  await fanOutCtx.workflows.documents.documentRender.start({ doc: "a.md" });
  // @ts-expect-error: the step may start only the workflows its spec lists under starts
  void fanOutCtx.workflows.documents.otherWorkflow;
  // @ts-expect-error: a step without starts has no child workflows
  void renderCtx.workflows.documents;
  const child = await fanOutCtx.workflows.documents.documentRender.start({ document: "a.md" });
  // @ts-expect-error: the waiting step's payload is of the wrong type
  void child.onComplete(fanOutCtx.next.join, { batch_id: "b" });
  // @ts-expect-error: a step that waits for a child is entered through onComplete, not called
  void fanOutCtx.next.join(pending);
  // @ts-expect-error: the result exists only on a succeeded end
  void joinCtx.signal.result;
  // @ts-expect-error: parentClose is "cancel" or "abandon"
  await fanOutCtx.workflows.documents.documentRender.start({ document: "a.md" }, { parentClose: "keep" });
}
