//! Readable, unique-enough endpoint names: `adjective-animal-number`.

use quiver_core::secret::random_below;

const ADJECTIVES: &[&str] = &[
    "amazing", "brave", "bright", "calm", "clever", "cosmic", "crisp", "daring", "eager", "fancy", "gentle",
    "glad", "glowing", "golden", "grand", "happy", "honest", "humble", "jolly", "keen", "kind", "lively",
    "lucky", "mellow", "merry", "mighty", "modest", "noble", "polite", "proud", "quick", "quiet", "rapid",
    "ready", "shining", "smart", "smooth", "steady", "sunny", "swift", "tender", "tidy", "vivid", "warm",
    "wise", "witty", "young", "zesty",
];

const ANIMALS: &[&str] = &[
    "alpaca", "badger", "baboon", "beagle", "bison", "bobcat", "camel", "cheetah", "condor", "coyote",
    "crane", "dingo", "dolphin", "eagle", "falcon", "ferret", "finch", "gazelle", "gecko", "gibbon", "heron",
    "hornet", "husky", "ibex", "impala", "jackal", "jaguar", "koala", "lemur", "lynx", "marlin", "marmot",
    "mink", "moose", "ocelot", "otter", "panda", "parrot", "pelican", "puffin", "quail", "raven", "salmon",
    "seal", "sparrow", "tapir", "tiger", "toucan", "walrus", "weasel", "wombat", "yak", "zebra",
];

/// A random endpoint name such as `glowing-baboon-15797` (about 25 million possibilities).
pub(crate) fn random_endpoint() -> String {
    let adjective = ADJECTIVES[random_below(ADJECTIVES.len() as u32) as usize];
    let animal = ANIMALS[random_below(ANIMALS.len() as u32) as usize];
    let number = 10_000 + random_below(90_000);
    format!("{adjective}-{animal}-{number}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_names_are_lowercase_words_and_a_number() {
        let name = random_endpoint();
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts.len(), 3, "{name}");
        assert!(
            parts[2]
                .parse::<u32>()
                .is_ok_and(|n| (10_000..100_000).contains(&n))
        );
    }
}
