// Turns a compiled .proto (a FileDescriptorSet from `buf build`) into a plain, sorted listing of
// everything that reaches the wire: services and methods, messages and fields (name, number, type,
// label, options), enums and values. Comments and source positions are dropped, so two protos that
// differ only in prose compare equal, and any wire difference shows up as a JSON diff.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary, toJson } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FieldOptionsSchema,
  FileDescriptorSetSchema,
  FileOptionsSchema,
  MessageOptionsSchema,
  MethodOptionsSchema,
  type DescriptorProto,
  type EnumDescriptorProto,
} from '@bufbuild/protobuf/wkt';

export interface WireListing {
  file: string;
  package: string;
  syntax: string;
  options: unknown;
  services: {
    name: string;
    methods: { name: string; input: string; output: string; clientStreaming: boolean; serverStreaming: boolean; options: unknown }[];
  }[];
  messages: MessageListing[];
  enums: EnumListing[];
}
interface MessageListing {
  name: string;
  options: unknown;
  fields: {
    name: string;
    number: number;
    label: string;
    type: string;
    typeName: string;
    jsonName: string;
    oneof: number | null;
    proto3Optional: boolean;
    options: unknown;
  }[];
  oneofs: string[];
  messages: MessageListing[];
  enums: EnumListing[];
  reservedRanges: [number, number][];
  reservedNames: string[];
}
interface EnumListing {
  name: string;
  values: { name: string; number: number }[];
}

/** File options that only steer code generators for other languages; they never reach the wire. */
const CODEGEN_ONLY_FILE_OPTIONS = ['goPackage'];

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function listEnum(e: EnumDescriptorProto): EnumListing {
  return { name: e.name, values: e.value.map((v) => ({ name: v.name, number: v.number })).sort((a, b) => a.number - b.number || byName(a, b)) };
}

function listMessage(m: DescriptorProto): MessageListing {
  return {
    name: m.name,
    options: m.options ? toJson(MessageOptionsSchema, m.options) : null,
    fields: m.field
      .map((f) => ({
        name: f.name,
        number: f.number,
        label: FieldDescriptorProto_Label[f.label],
        type: FieldDescriptorProto_Type[f.type],
        typeName: f.typeName,
        jsonName: f.jsonName,
        oneof: f.oneofIndex ?? null,
        proto3Optional: f.proto3Optional,
        options: f.options ? toJson(FieldOptionsSchema, f.options) : null,
      }))
      .sort((a, b) => a.number - b.number),
    oneofs: m.oneofDecl.map((o) => o.name),
    messages: m.nestedType.map(listMessage).sort(byName),
    enums: m.enumType.map(listEnum).sort(byName),
    reservedRanges: m.reservedRange.map((r): [number, number] => [r.start, r.end]),
    reservedNames: [...m.reservedName].sort(),
  };
}

/** The wire listing of the single file in a serialized FileDescriptorSet. */
export function wireListing(descriptorSet: Uint8Array): WireListing {
  const set = fromBinary(FileDescriptorSetSchema, descriptorSet);
  if (set.file.length !== 1) throw new Error(`expected one file in the descriptor set, got ${set.file.length}`);
  const file = set.file[0];
  const options = file.options ? (toJson(FileOptionsSchema, file.options) as Record<string, unknown>) : {};
  for (const key of CODEGEN_ONLY_FILE_OPTIONS) delete options[key];
  return {
    file: file.name,
    package: file.package,
    syntax: file.syntax,
    options,
    services: file.service
      .map((s) => ({
        name: s.name,
        methods: s.method.map((m) => ({
          name: m.name,
          input: m.inputType,
          output: m.outputType,
          clientStreaming: m.clientStreaming,
          serverStreaming: m.serverStreaming,
          options: m.options ? toJson(MethodOptionsSchema, m.options) : null,
        })),
      }))
      .sort(byName),
    messages: file.messageType.map(listMessage).sort(byName),
    enums: file.enumType.map(listEnum).sort(byName),
  };
}

/** Compiles `relPath` inside the buf module at `moduleDir` with the buf from node_modules. */
export function buildDescriptorSet(bufBin: string, moduleDir: string, relPath: string): Uint8Array {
  const tmp = mkdtempSync(join(tmpdir(), 'skiff-descriptor-'));
  try {
    const out = join(tmp, 'set.binpb');
    execFileSync(bufBin, ['build', '--exclude-source-info', '--path', relPath, '-o', out], {
      cwd: moduleDir,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 60_000,
    });
    return readFileSync(out);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
