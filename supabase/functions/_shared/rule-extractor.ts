// Rule-based extraction: works without any LLM, and runs beside the LLM too, because the two
// things the seed ranks highest must never be missed: explicit "remember …" statements and user
// corrections ("no, the path is X not Y"). Both become user-stated / highest-priority candidates,
// rewritten to third person so they satisfy the writing constraints.
import type { Candidate } from "./candidates.ts";
import { messageText } from "./tokens.ts";
import { findCorrection, findRememberStatement } from "./rule-patterns.ts";
import { trimEndOf } from "./text-scan.ts";
import { normaliseContent } from "./writing-constraints.ts";

interface MessageLike {
  role: string;
  content?: unknown;
}

const PREFERENCE = /\b(prefer|prefers|like|likes|hate|hates|style|always|never)\b/i;

/** First/second person → third person ("I prefer" → "The user prefers"); crude but predictable. */
export function toThirdPerson(text: string): string {
  let t = text
    .replace(/\bI am\b|\bI'm\b/g, "the user is")
    .replace(/\bI've\b|\bI have\b/g, "the user has")
    .replace(/\bI'd\b/g, "the user would")
    .replace(/\bI'll\b/g, "the user will")
    .replace(/\bI\b/g, "the user")
    .replace(/\b(me|myself)\b/gi, "the user")
    .replace(/\b(my|mine)\b/gi, "the user's")
    .replace(/\bwe're\b/gi, "the team is")
    .replace(/\bwe've\b/gi, "the team has")
    .replace(/\b(we|us|ourselves)\b/gi, "the team")
    .replace(/\b(our|ours)\b/gi, "the team's")
    .replace(/\byou're\b/gi, "the agent is")
    .replace(/\byou've\b/gi, "the agent has")
    .replace(/\byou'll\b/gi, "the agent will")
    .replace(/\b(you|yourself|yourselves)\b/gi, "the agent")
    .replace(/\b(your|yours)\b/gi, "the agent's");
  // Verb agreement after the substituted subject ("the user prefer" → "the user prefers").
  t = t.replace(
    /\b(the user|the agent) (prefer|want|like|use|need|hate|expect|work|deploy|run|deploys|want)\b(?!s)/gi,
    (_m, subj: string, verb: string) => `${subj} ${verb.endsWith("s") ? verb : verb + "s"}`,
  );
  t = t.replace(/\bthe agent are\b/gi, "the agent is");
  return t;
}

function sentenceCase(text: string): string {
  const t = trimEndOf(normaliseContent(text), ",;:-");
  if (!t) return t;
  const withStop = /[.!?]$/.test(t) ? t : `${t}.`;
  return withStop[0]!.toUpperCase() + withStop.slice(1);
}

/**
 * Candidates from explicit statements in the user's messages. `namespace` is where the session's
 * facts go (the request's scope, scopes.ts's defaultScope); the user's own preferences go to the
 * user scope.
 */
export function extractByRules(messages: MessageLike[], opts: { namespace: string }): Candidate[] {
  const out: Candidate[] = [];
  const scope = opts.namespace;
  for (const m of messages) {
    if (m.role !== "user") continue;
    const text = messageText(m.content);
    if (!text) continue;
    // "remember …" (not "do you remember …?") at a sentence start; then "no, X not Y".
    const remember = findRememberStatement(text);
    if (remember && !trimEndOf(remember).endsWith("?")) {
      const fact = sentenceCase(toThirdPerson(remember));
      if (fact.length > 1) {
        out.push({
          content: fact,
          type: "semantic",
          namespace: PREFERENCE.test(fact) && /\bthe user\b/i.test(fact) ? "user/preferences" : scope,
          source: "user_stated",
          priority: "highest",
          importance: 5,
        });
      }
      continue;
    }
    const correction = findCorrection(text);
    if (correction) {
      const fixed = sentenceCase(toThirdPerson(correction));
      out.push({
        content: `Correction from the user: ${fixed[0]!.toLowerCase()}${fixed.slice(1)}`,
        type: "semantic",
        namespace: scope,
        source: "correction",
        priority: "highest",
        importance: 5,
      });
    }
  }
  return out;
}
