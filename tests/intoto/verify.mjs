// An independent verifier of trainlock's in-toto attestations, none of trainlock's code: reads
// a DSSE envelope, rebuilds the pre-authentication encoding with Sigstore's implementation
// (@sigstore/core's dsse.preAuthEncoding), checks an Ed25519 signature over it with Node's
// crypto and the PEM public key, and checks the in-toto Statement's subject digest.
//   node verify.mjs ENVELOPE PUBLIC_KEY_PEM sha256:<hex>
// Exit 0 and "verified" when it holds; exit 1 with the reason otherwise.
import { readFileSync } from 'node:fs';
import core from '@sigstore/core';

const [envelopePath, keyPath, imageDigest] = process.argv.slice(2);
function refuse(why) {
  console.log(`refused: ${why}`);
  process.exit(1);
}
const envelope = JSON.parse(readFileSync(envelopePath, 'utf8'));
if (envelope.payloadType !== 'application/vnd.in-toto+json') refuse('payloadType');
const payload = Buffer.from(envelope.payload, 'base64');
const pae = core.dsse.preAuthEncoding(envelope.payloadType, payload);
const key = core.crypto.createPublicKey(readFileSync(keyPath, 'utf8'));
const verified = (envelope.signatures || []).some((s) =>
  core.crypto.verify(pae, key, Buffer.from(s.sig, 'base64'), null));
if (!verified) refuse('no signature verifies with the key');
const statement = JSON.parse(payload.toString('utf8'));
if (statement._type !== 'https://in-toto.io/Statement/v1') refuse('not an in-toto Statement v1');
const want = imageDigest.replace(/^sha256:/, '');
if (!statement.subject.some((s) => s.digest && s.digest.sha256 === want)) refuse('subject digest');
console.log(`verified: ${statement.subject[0].name}@sha256:${want} ${statement.predicateType}`);
