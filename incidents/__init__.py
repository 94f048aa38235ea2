"""The incident catalog: one declarative definition per replayed incident."""
