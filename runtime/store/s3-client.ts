/**
 * @module How `S3Store` makes its AWS SDK client when the caller gives none.
 *
 * The SDK prints a `NodeVersionSupportWarning` on Node 20 when a client is
 * made: SDK versions published after January 2027 will need Node 22. The
 * version taquba pins runs on Node 20, which taquba supports (see the
 * README's Install section), so that notice would only alarm users about a
 * future that taquba manages: the store makes its client with the SDK's
 * documented opt-out variable set, and restores the variable at once.
 */
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";

const OPT_OUT = "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED";

/** A client with `config`, made without the SDK's Node-version notice. */
export function createS3Client(config: S3ClientConfig): S3Client {
  const before = process.env[OPT_OUT];
  process.env[OPT_OUT] = "true";
  try {
    return new S3Client(config);
  } finally {
    if (before === undefined) delete process.env[OPT_OUT];
    else process.env[OPT_OUT] = before;
  }
}
