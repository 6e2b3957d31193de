//! Where a string sits in a definition, from its JSON pointer, and so how
//! it is read: a name is an identifier split into words, a label (a title,
//! an enum value, a default) should hold no instructions at all, prose may
//! hold a documentation link, and a locator (`$schema`, `icons`) is where
//! URLs and encoded data belong.

/// Where a string sits in a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// The definition's own name, URI or URI template.
    Key,
    /// Another name: a parameter's (an object key under `properties`), a
    /// prompt argument's, a resource's display name.
    Name,
    /// A title.
    Title,
    /// An enum or `const` value, a JSON Schema `type` or `format`.
    Choice,
    /// A default or an example value.
    Sample,
    /// The definition's description.
    Description,
    /// Any other text: parameter descriptions, `_meta`, annotations.
    Prose,
    /// `$schema`, `$id`, `$ref`, `icons` and regular expressions
    /// (`pattern`): URLs, data and symbols belong here.
    Locator,
    /// An entry of `required`: a parameter name already read as a name.
    Repeat,
}

impl Place {
    /// The place of the string at `pointer`; `key_pointer` is that of the
    /// definition's own name (`/name`, `/uri`, `/uriTemplate`).
    pub(super) fn of(pointer: &str, key_pointer: &str) -> Place {
        let mut segments = pointer.rsplit('/');
        let last = segments.next().unwrap_or_default();
        let parent = segments.next().unwrap_or_default();
        if pointer == key_pointer {
            Place::Key
        } else if matches!(last, "$schema" | "$id" | "$ref" | "pattern") || pointer.starts_with("/icons/") {
            Place::Locator
        } else if parent == "required" {
            Place::Repeat
        } else if pointer == "/description" {
            Place::Description
        } else if last == "title" {
            Place::Title
        } else if last == "name" {
            Place::Name
        } else if matches!(last, "default" | "examples" | "example") || parent == "examples" {
            Place::Sample
        } else if matches!(last, "const" | "type" | "format") || parent == "enum" {
            Place::Choice
        } else {
            Place::Prose
        }
    }

    /// A place that labels rather than explains: instructions there are
    /// out of place, and worse than in a description.
    pub(super) fn is_label(self) -> bool {
        matches!(
            self,
            Place::Key | Place::Name | Place::Title | Place::Choice | Place::Sample
        )
    }

    /// A name, read as an identifier split into words.
    pub(super) fn is_identifier(self) -> bool {
        matches!(self, Place::Key | Place::Name)
    }

    /// How a reason names the place.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Place::Key => "the definition's name",
            Place::Name => "a parameter name",
            Place::Title => "a title",
            Place::Choice => "an enum value",
            Place::Sample => "a default or example value",
            Place::Description => "the description",
            Place::Prose => "a description",
            Place::Locator => "a schema reference",
            Place::Repeat => "the list of required parameters",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_name_their_place() {
        let of = |p: &str| Place::of(p, "/name");
        assert_eq!(of("/name"), Place::Key);
        assert_eq!(of("/description"), Place::Description);
        assert_eq!(of("/title"), Place::Title);
        assert_eq!(of("/inputSchema/properties/path/description"), Place::Prose);
        assert_eq!(
            of("/inputSchema/properties/sidenote"),
            Place::Prose,
            "keys are named by the caller"
        );
        assert_eq!(of("/inputSchema/properties/mode/enum/2"), Place::Choice);
        assert_eq!(of("/inputSchema/properties/unit/default"), Place::Sample);
        assert_eq!(of("/inputSchema/properties/name/examples/0"), Place::Sample);
        assert_eq!(of("/inputSchema/required/1"), Place::Repeat);
        assert_eq!(of("/inputSchema/$schema"), Place::Locator);
        assert_eq!(of("/icons/0/src"), Place::Locator);
        assert_eq!(of("/arguments/0/name"), Place::Name);
        assert_eq!(Place::of("/name", "/uri"), Place::Name);
    }
}
